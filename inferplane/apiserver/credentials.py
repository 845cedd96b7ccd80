"""What `inferplane serve` makes before it listens: a certificate authority of its own and a serving
certificate it signs (for the address served, and `localhost`), a bearer token, and the kubeconfig
that carries all three to kubectl (mode 0600: it holds the token)."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

# How long the certificates are valid: a server is restarted far more often, and each start makes new ones.
VALID_FOR = datetime.timedelta(days=365)
# The kubeconfig's names for the cluster, user and context.
CONTEXT = "inferplane"


@dataclass(frozen=True)
class Credentials:
    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes
    token: str


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: str, signer: ec.EllipticCurvePrivateKey,
                 ca: bool, host: str | None = None) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + VALID_FOR)
               .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=ca, crl_sign=ca,
                                            content_commitment=False, key_encipherment=False, data_encipherment=False,
                                            key_agreement=False, encipher_only=False, decipher_only=False),
                              critical=True))
    if host is not None:
        names: list[x509.GeneralName] = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        try:
            address = ipaddress.ip_address(host)
            names += [x509.IPAddress(address)] if str(address) != "127.0.0.1" else []
        except ValueError:
            names += [x509.DNSName(host)] if host != "localhost" else []
        builder = (builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
                   .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False))
    return builder.sign(signer, hashes.SHA256())


def make_credentials(host: str) -> Credentials:
    """A new authority, a serving certificate for `host` (and localhost, 127.0.0.1) and a token."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _certificate("inferplane-serve-ca", ca_key, "inferplane-serve-ca", ca_key, ca=True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _certificate("inferplane-serve", key, "inferplane-serve-ca", ca_key, ca=False, host=host)
    pem = serialization.Encoding.PEM
    return Credentials(ca.public_bytes(pem), cert.public_bytes(pem),
                       key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()),
                       secrets.token_urlsafe(32))


def write_private(path: Path, data: bytes) -> None:
    """Write a file only its owner may read (created so: never readable by others, even for a moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.chmod(path, 0o600)  # an existing file keeps its mode through O_CREAT


def kubeconfig(server: str, credentials: Credentials) -> dict:
    return {"apiVersion": "v1", "kind": "Config", "current-context": CONTEXT, "preferences": {},
            "clusters": [{"name": CONTEXT, "cluster": {
                "server": server, "certificate-authority-data": base64.b64encode(credentials.ca_pem).decode()}}],
            "users": [{"name": CONTEXT, "user": {"token": credentials.token}}],
            "contexts": [{"name": CONTEXT, "context": {"cluster": CONTEXT, "user": CONTEXT}}]}


def write_kubeconfig(path: Path, server: str, credentials: Credentials) -> None:
    write_private(path, yaml.safe_dump(kubeconfig(server, credentials), sort_keys=False).encode())
