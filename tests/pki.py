"""Certificates for the TLS tests, minted by trustme: a CA, and identities (certificate and key)
issued by it for the host names given, written as PEM files (what the command lines take)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass(frozen=True)
class Identity:
    cert: Path
    key: Path


class Pki:
    """A CA whose certificate is `ca` (a PEM file in `directory`), issuing identities there."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self.authority = trustme.CA()
        self.ca = directory / "ca.pem"
        self.authority.cert_pem.write_to_path(str(self.ca))

    def issue(self, name: str, *hosts: str) -> Identity:
        """An identity named `name` (its files' stem, and its subject's CN) valid for `hosts`."""
        leaf = self.authority.issue_cert(*(hosts or (name,)), common_name=name)
        identity = Identity(self.directory / f"{name}.cert.pem", self.directory / f"{name}.key.pem")
        leaf.cert_chain_pems[0].write_to_path(str(identity.cert))
        leaf.private_key_pem.write_to_path(str(identity.key))
        return identity

    def server_context(self, identity: Identity, *, require_client: bool = True) -> ssl.SSLContext:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=str(self.ca))
        context.load_cert_chain(identity.cert, identity.key)
        context.verify_mode = ssl.CERT_REQUIRED if require_client else ssl.CERT_NONE
        return context

    def client_context(self, identity: Identity | None) -> ssl.SSLContext:
        """Trusting this CA alone; presenting `identity` (None: no certificate)."""
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(self.ca))
        if identity is not None:
            context.load_cert_chain(identity.cert, identity.key)
        return context
