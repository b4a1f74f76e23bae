"""TLS for the peer connections (mutual: each side presents a certificate issued to its node
name by the run's CA and checks the other's) and for the management API (the server's
certificate only; its clients authenticate with HTTP basic authentication)."""

from __future__ import annotations

import ssl
from typing import Any

from broker_ref.config import NodeConfig

__all__ = ["certificate_names", "management_context", "peer_client_context", "peer_server_context"]


def _context(config: NodeConfig, purpose: int) -> ssl.SSLContext:
    context = ssl.SSLContext(purpose)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(config.tls_cert_file, config.tls_key_file)
    context.load_verify_locations(config.tls_ca_file)
    return context


def peer_server_context(config: NodeConfig) -> ssl.SSLContext | None:
    """The replication listener's context: a peer must present a certificate of the CA."""
    if not config.replication_tls:
        return None
    context = _context(config, ssl.PROTOCOL_TLS_SERVER)
    context.verify_mode = ssl.CERT_REQUIRED
    return context


def peer_client_context(config: NodeConfig) -> ssl.SSLContext | None:
    """The dialler's context: the listener's certificate must be of the CA and name the peer
    dialled (its name is the server name asked for, whatever address reaches it)."""
    if not config.replication_tls:
        return None
    context = _context(config, ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = True
    return context


def management_context(config: NodeConfig) -> ssl.SSLContext | None:
    if not config.management_tls:
        return None
    return _context(config, ssl.PROTOCOL_TLS_SERVER)


def certificate_names(peercert: Any) -> set[str]:
    """The DNS names a verified peer certificate (`getpeercert()`) is issued to."""
    if not isinstance(peercert, dict):
        return set()
    return {value for kind, value in peercert.get("subjectAltName", ()) if kind == "DNS"}
