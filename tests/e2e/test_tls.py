"""TLS on the Kafka listener, against the real daemon over real TCP and real TLS (certificates
minted by trustme): `--tls-cert/--tls-key` make the listener TLS-only, `--tls-ca` requires client
certificates from that CA (Kafka's ssl.client.auth=required); a refused client is closed during
or right after the handshake (TLS 1.3 lets the client finish its side first), never answered; a
stalled handshake is closed after `--tls-handshake-timeout-ms` while others are served; bad
flags exit 2 with one line before anything listens.
"""

from __future__ import annotations

import re
import socket
import ssl
import struct
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.registry import decode_response, encode_request
from tests.pki import Identity, Pki

from .daemon_process import ROOT, DaemonProcess, free_port

HELLO = ApiVersionsRequest(client_software_name="fencer-tests", client_software_version="1.0")


@dataclass
class Certificates:
    pki: Pki  # the CA the daemon trusts (`ca`), which issued `server` and `client`
    server: Identity
    client: Identity
    stranger: Identity  # a client certificate from another CA


@pytest.fixture
def pki(tmp_path: Path) -> Certificates:
    pki = Pki(tmp_path / "pki")
    server, client = pki.issue("controller", "127.0.0.1", "localhost"), pki.issue("client-1")
    return Certificates(pki, server, client, Pki(tmp_path / "other-ca").issue("client-1"))


@pytest.fixture
def daemon(tmp_path: Path, pki: Certificates) -> Iterator[DaemonProcess]:
    metrics_port = free_port()
    process = DaemonProcess(
        tmp_path / "data",
        "--tls-cert",
        str(pki.server.cert),
        "--tls-key",
        str(pki.server.key),
        "--tls-ca",
        str(pki.pki.ca),
        "--tls-handshake-timeout-ms",
        "1000",
        "--metrics-listen",
        f"127.0.0.1:{metrics_port}",
    ).start()
    process.metrics_port = metrics_port  # type: ignore[attr-defined]
    yield process
    assert process.stop() == 0


def client_context(pki: Certificates, certificate: Identity | None) -> ssl.SSLContext:
    """Trusting the daemon's CA; presenting `certificate` (None: none)."""
    return pki.pki.client_context(certificate)


def tls_connect(port: int, context: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection(("127.0.0.1", port), timeout=10)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def read_frame(sock: socket.socket) -> bytes:
    """One whole frame, or b"" if the daemon closed the connection first."""
    data = b""
    while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
        chunk = sock.recv(65536)
        if not chunk:
            return b""
        data += chunk
    return data[4:]


def api_versions(sock: socket.socket, correlation_id: int = 7) -> ApiVersionsResponse:
    sock.sendall(encode_request(HELLO, 3, correlation_id))
    payload = read_frame(sock)
    assert payload, "closed instead of answered"
    header, response = decode_response(payload, 18, 3)
    assert header.correlation_id == correlation_id and isinstance(response, ApiVersionsResponse)
    return response


def refused(port: int, context: ssl.SSLContext) -> str:
    """Connect and ask ApiVersions: how the daemon refused ("handshake": during it; "closed": right
    after it, the client's side having finished first, as TLS 1.3 allows); never an answer."""
    try:
        sock = tls_connect(port, context)
    except (ssl.SSLError, ConnectionError):
        return "handshake"
    with sock:
        try:
            sock.sendall(encode_request(HELLO, 3, 1))
            assert read_frame(sock) == b"", "a refused client was answered"
        except (ssl.SSLError, ConnectionError):
            pass
    return "closed"


def closed_unanswered(sock: socket.socket) -> bool:
    """The daemon closed (or reset) the connection without sending a frame."""
    try:
        return read_frame(sock) == b""
    except ConnectionResetError:
        return True


def failures(daemon: DaemonProcess) -> dict[str, float]:
    port = daemon.metrics_port  # type: ignore[attr-defined]
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    return {
        reason: float(value)
        for reason, value in re.findall(r'^fencer_tls_handshake_failures_total\{reason="(\w+)"\} (\S+)$', text, re.M)
    }


def test_a_client_certificate_from_the_ca_is_answered_over_tls(daemon: DaemonProcess, pki: Certificates) -> None:
    with tls_connect(daemon.port, client_context(pki, pki.client)) as sock:
        assert sock.version() in ("TLSv1.2", "TLSv1.3")
        response = api_versions(sock, 1)
        assert response.error_code == 0 and response.api_keys
        assert api_versions(sock, 2).error_code == 0  # the connection goes on
    assert failures(daemon).get("no_certificate") == 0


def test_a_client_without_a_certificate_is_refused_and_never_answered(daemon: DaemonProcess, pki: Certificates) -> None:
    assert refused(daemon.port, client_context(pki, None)) in ("handshake", "closed")
    deadline = time.monotonic() + 5
    while failures(daemon).get("no_certificate") != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert failures(daemon)["no_certificate"] == 1
    with tls_connect(daemon.port, client_context(pki, pki.client)) as sock:  # others are served
        assert api_versions(sock).error_code == 0


def test_a_client_certificate_from_another_ca_is_refused(daemon: DaemonProcess, pki: Certificates) -> None:
    assert refused(daemon.port, client_context(pki, pki.stranger)) in ("handshake", "closed")
    deadline = time.monotonic() + 5
    while failures(daemon).get("bad_certificate") != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert failures(daemon)["bad_certificate"] == 1
    assert "bad_certificate" in daemon.stderr() and "127.0.0.1:" in daemon.stderr()  # logged with the peer


def test_a_plaintext_client_on_the_tls_port_is_closed_and_others_are_served(
    daemon: DaemonProcess, pki: Certificates
) -> None:
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as plain:
        plain.sendall(encode_request(HELLO, 3, 1))
        assert closed_unanswered(plain)
    with tls_connect(daemon.port, client_context(pki, pki.client)) as sock:
        assert api_versions(sock).error_code == 0
    assert failures(daemon)["not_tls"] == 1


def test_a_stalled_handshake_is_closed_after_the_timeout_while_others_are_served(
    daemon: DaemonProcess, pki: Certificates
) -> None:
    with socket.create_connection(("127.0.0.1", daemon.port), timeout=10) as silent:
        started = time.monotonic()
        for _ in range(3):  # served meanwhile, each on a connection of its own
            with tls_connect(daemon.port, client_context(pki, pki.client)) as sock:
                assert api_versions(sock).error_code == 0
        assert time.monotonic() - started < 1.0, "served only once the stalled handshake gave up"
        assert closed_unanswered(silent)
        waited = time.monotonic() - started
    assert 0.9 < waited < 5, waited
    assert failures(daemon)["timeout"] == 1


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller", "--listen", "127.0.0.1:0", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_bad_tls_flags_exit_2_with_one_line_before_listening(tmp_path: Path, pki: Certificates) -> None:
    other_key = str(pki.pki.issue("other", "127.0.0.1").key)
    data = tmp_path / "data"
    cert, key, ca = str(pki.server.cert), str(pki.server.key), str(pki.pki.ca)
    cases = {
        "--tls-cert": ("--tls-cert", str(tmp_path / "missing.pem"), "--tls-key", key),
        "does not match": ("--tls-cert", cert, "--tls-key", other_key),
        "--tls-ca": ("--tls-cert", cert, "--tls-key", key, "--tls-ca", str(tmp_path / "missing-ca.pem")),
        "--tls-key": ("--tls-cert", cert),
        "no usable": ("--tls-cert", ca, "--tls-key", ca),
    }
    for expected, args in cases.items():
        result = run("--data-dir", str(data), *args)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stdout == "", "it listened"
        (line,) = result.stderr.strip().splitlines()
        assert expected in line, line
    assert not data.exists(), "refused before anything was touched"
