"""The lab's errors: one root, a few kinds a user meets.

    LabError                      anything the lab reports as a one-line error (exit 2)
    ├── UsageError                bad arguments: an unknown scenario, a bad seed, a bad option
    ├── InputError                a file the lab was given cannot be read (names file and line)
    ├── SetupError                something the lab needs is missing (Toxiproxy, Go, a package)
    ├── DiskFullError             a folder the lab writes into is full (or refused a write)
    ├── PluginError               an installed package's scenario or target (entry point) is wrong
    └── ClusterError              the cluster could not be started or reached
        └── PortClashError        a port the lab was told to use is taken

A broker misbehaving is never an exception: it is data in the history.
"""

from __future__ import annotations

__all__ = [
    "ClusterError",
    "DiskFullError",
    "InputError",
    "LabError",
    "PluginError",
    "PortClashError",
    "SetupError",
    "UsageError",
]


class LabError(Exception):
    """The root of every error the lab raises on purpose."""


class UsageError(LabError):
    """The user asked for something that does not exist or does not parse."""


class InputError(LabError):
    """A file given to the lab cannot be read; the message names file and line."""


class SetupError(LabError):
    """Something the lab needs is not installed or cannot be found."""


class DiskFullError(LabError):
    """A folder the lab writes into has no room (or refused a write); the message names it."""


class PluginError(LabError):
    """An entry point of an installed package (`lab.scenarios`, `lab.targets`) cannot be
    loaded, or names something that is not a scenario or a target; the message names it."""


class ClusterError(LabError):
    """A node, a proxy or Toxiproxy could not be started, reached or stopped."""


class PortClashError(ClusterError):
    """A port the lab was told to use is already taken."""
