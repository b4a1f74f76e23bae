"""The reference broker's errors: one root, each a one-line message for stderr.

    BrokerError               anything the node reports and exits on (status 2)
    ├── ConfigError           the config file is missing, not JSON, or has a bad key or value
    ├── StartupError          a port is taken or the data directory is in use
    ├── StoreError            the on-disk log cannot be opened or is not a log
    └── ChangeRefused         a management request the node will not carry out (HTTP 422)

A misbehaving client is never an exception: the node closes its link or
connection with an AMQP error condition.
"""

from __future__ import annotations

__all__ = ["BrokerError", "ChangeRefused", "ConfigError", "StartupError", "StoreError"]


class BrokerError(Exception):
    """The root of every error the node raises on purpose."""


class ConfigError(BrokerError):
    """The node's config file cannot be used; the message names the file and the key."""


class StartupError(BrokerError):
    """The node cannot start: a port is taken or its data directory is locked."""


class StoreError(BrokerError):
    """The on-disk log cannot be opened, locked or written."""


class StoreCorrupt(StoreError):
    """The log is damaged before its tail (valid records follow a bad one): not a torn
    write, so recovery stops rather than drop what follows."""

    def __init__(self, path: str, offset: int, reason: str, resumes_at: int) -> None:
        super().__init__(
            f"{path}: corrupt record at offset {offset} ({reason}); valid records follow at "
            f"offset {resumes_at}: the log is damaged, not torn"
        )
        self.path = path
        self.offset = offset
        self.reason = reason
        self.resumes_at = resumes_at


class ChangeRefused(BrokerError):
    """A management request the node will not carry out; the message says why, `status`
    is the HTTP status it is answered with."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status
