"""TLS for the listener (controller.server.tls): the server context from the flags' files, a failed
handshake's reason, the peer's principal; and a connection over a real TLS stream (a socket pair,
certificates from trustme) that carries the principal and the host with each request."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest
import trio
import trustme
from cryptography import x509

from controller.auth.principal import ANONYMOUS
from controller.server.connection import Connection
from controller.server.tls import TlsConfigError, failure_reason, peer_principal, server_context
from protocol.framing import FrameBuffer

from .connection_peer import Host, request


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


def files(tmp_path: Path, ca: trustme.CA) -> tuple[Path, Path, Path]:
    server = ca.issue_cert("127.0.0.1")
    cert, key, ca_file = tmp_path / "cert.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    server.cert_chain_pems[0].write_to_path(str(cert))
    server.private_key_pem.write_to_path(str(key))
    ca.cert_pem.write_to_path(str(ca_file))
    return cert, key, ca_file


def test_the_context_requires_client_certificates_only_with_a_ca(tmp_path: Path, ca: trustme.CA) -> None:
    cert, key, ca_file = files(tmp_path, ca)
    assert server_context(cert, key).verify_mode == ssl.CERT_NONE
    required = server_context(cert, key, ca_file)
    assert required.verify_mode == ssl.CERT_REQUIRED
    assert required.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert len(required.get_ca_certs()) == 1, "that CA alone, no system CAs"


def test_unusable_files_are_one_line_naming_the_flag(tmp_path: Path, ca: trustme.CA) -> None:
    cert, key, _ = files(tmp_path, ca)
    other_key = tmp_path / "other.pem"
    ca.issue_cert("127.0.0.1").private_key_pem.write_to_path(str(other_key))
    for args, expected in (
        ((tmp_path / "nope.pem", key, None), "--tls-cert"),
        ((cert, tmp_path / "nope.pem", None), "--tls-key"),
        ((cert, key, tmp_path / "nope.pem"), "--tls-ca"),
        ((cert, other_key, None), "does not match"),
        ((cert, key, key), "--tls-ca"),  # a key is no CA certificate
    ):
        with pytest.raises(TlsConfigError) as caught:
            server_context(*args)
        message = str(caught.value)
        assert expected in message and "\n" not in message, message


def test_the_principal_is_anonymous_without_a_certificate_and_the_subject_with_one(ca: trustme.CA) -> None:
    assert peer_principal(None) == "User:ANONYMOUS" == ANONYMOUS  # Kafka's KafkaPrincipal.ANONYMOUS
    leaf = ca.issue_cert(
        "client@example.com", common_name="client-1", organization_name="fencer tests", organization_unit_name="ops"
    )
    der = ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())
    subject = x509.load_der_x509_certificate(der).subject
    assert peer_principal(der) == "User:" + subject.rfc4514_string() == "User:CN=client-1,OU=ops,O=fencer tests"


def test_failure_reasons() -> None:
    def failed(reason: str) -> BaseException:
        error = ssl.SSLError(1, f"[SSL: {reason}] {reason.lower()}")
        error.reason = reason
        broken = trio.BrokenResourceError()
        broken.__cause__ = error
        return broken

    assert failure_reason(None) == "timeout"
    assert failure_reason(failed("PEER_DID_NOT_RETURN_A_CERTIFICATE")) == "no_certificate"
    assert failure_reason(failed("TLSV13_ALERT_CERTIFICATE_REQUIRED")) == "no_certificate"
    assert failure_reason(failed("CERTIFICATE_VERIFY_FAILED")) == "bad_certificate"
    assert failure_reason(failed("WRONG_VERSION_NUMBER")) == "not_tls"
    assert failure_reason(failed("HTTP_REQUEST")) == "not_tls"
    assert failure_reason(trio.BrokenResourceError()) == "closed"
    assert failure_reason(failed("NO_SHARED_CIPHER")) == "other"


async def test_a_tls_connection_carries_the_principal_and_the_host_with_each_request(
    nursery: trio.Nursery, tmp_path: Path, ca: trustme.CA
) -> None:
    cert, key, ca_file = files(tmp_path, ca)
    server = server_context(cert, key, ca_file)
    leaf = ca.issue_cert("client@example.com", common_name="client-1")
    client = ssl.create_default_context(cafile=str(ca_file))
    leaf.configure_cert(client)
    ours, theirs = socket.socketpair()
    host = Host()
    stream = trio.SSLStream(trio.SocketStream(trio.socket.from_stdlib_socket(ours)), server, server_side=True)
    connection = Connection(stream, writer=host, exchanges=host, budget=host.budget, max_frame_bytes=1 << 20)
    nursery.start_soon(connection.run)
    theirs_stream = trio.SocketStream(trio.socket.from_stdlib_socket(theirs))
    peer = trio.SSLStream(theirs_stream, client, server_hostname="127.0.0.1")
    await peer.send_all(request(1))
    pending = await host.next_request(1)
    der = ssl.PEM_cert_to_DER_cert(leaf.cert_chain_pems[0].bytes().decode())
    assert connection.principal == pending.principal == peer_principal(der) != "User:ANONYMOUS"
    assert pending.host == connection.host
    host.answer(pending)
    buffer = FrameBuffer()
    with trio.fail_after(5):
        while not (frames := buffer.frames()):
            buffer.receive_data(await peer.receive_some(65536))
    assert [int.from_bytes(frame[:4], "big") for frame in frames] == [1]
    await peer.aclose()
