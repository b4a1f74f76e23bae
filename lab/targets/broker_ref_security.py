"""A run's secrets for broker_ref's group: the group secret every node proves it knows, and,
when the run asks for TLS, a CA of its own and a certificate for each node, issued to the
node's name (and to 127.0.0.1 and localhost, for the management API).

Both live in the run's nodes folder, made once and read by every later use in the run (a
node restarted in the run presents what it started with); nothing leaves the run folder.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from lab.ground.errors import LabError

__all__ = ["TlsFiles", "group_secret", "tls_files", "write_private"]

SECRET_FILE = "group_secret"
TLS_DIR = "tls"


def _write_private(path: Path, data: bytes) -> bool:
    """Write `path` readable by its owner only, unless it exists; True when written."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return True


def write_private(path: Path, data: bytes) -> None:
    """Write `path` (replacing it) readable by its owner only: a file that holds a secret."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older file keeps its mode otherwise
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def group_secret(nodes_dir: Path) -> str:
    """The run's group secret (64 hex digits), made the first time it is asked for."""
    nodes_dir.mkdir(parents=True, exist_ok=True)
    path = nodes_dir / SECRET_FILE
    _write_private(path, secrets.token_hex(32).encode())
    return path.read_text(encoding="utf-8").strip()


@dataclass(frozen=True)
class TlsFiles:
    ca: Path
    cert: Path
    key: Path

    def config(self) -> dict[str, str]:
        """The node configuration keys naming these files."""
        return {
            "tls_ca_file": str(self.ca),
            "tls_cert_file": str(self.cert),
            "tls_key_file": str(self.key),
        }


def tls_files(nodes_dir: Path, node: str) -> TlsFiles:
    """The CA and `node`'s certificate and key, made the first time they are asked for."""
    folder = nodes_dir / TLS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca_cert = _ca(folder)
    cert, key = folder / f"{node}.crt", folder / f"{node}.key"
    if not cert.is_file():
        _issue(node, ca_key, ca_cert, cert, key)
    return TlsFiles(folder / "ca.crt", cert, key)


def _ca(folder: Path) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key_path, cert_path = folder / "ca.key", folder / "ca.crt"
    if key_path.is_file() and cert_path.is_file():
        loaded = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise LabError(f"{key_path} is not the run CA's key")
        return loaded, x509.load_pem_x509_certificate(cert_path.read_bytes())
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "broker_ref run CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False),
            critical=True,
        )
        .sign(key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    if _write_private(key_path, pem):
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return _ca(folder)


def _issue(
    node: str,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    cert_path: Path,
    key_path: Path,
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    names = [
        x509.DNSName(node),
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    usage = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, node)]))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    key_path.unlink(missing_ok=True)
    _write_private(key_path, pem)
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
