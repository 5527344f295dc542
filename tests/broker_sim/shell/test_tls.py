"""The fleet's TLS (broker_sim.shell.tls), with certificates minted by trustme: a controller
connection over TLS to a real trio TLS server that requires the fleet's certificate; the controller's
certificate checked against the host dialled; the brokers' control listeners TLS-only, answering only
clients with a certificate from the CA; the contexts' files checked; the command line's flags."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from broker_sim.cli import UsageError, parse_run, run_command
from broker_sim.shell.connection import ConnectionLost, ControllerConnection
from broker_sim.shell.listener import BrokerControlListener
from broker_sim.shell.tls import FleetTls, TlsError
from protocol.api_keys import ApiKey
from protocol.errors import ProtocolError
from protocol.framing import FrameBuffer
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from protocol.registry import decode_request, encode_response
from tests.pki import Identity, Pki


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return Pki(tmp_path / "pki")


def fleet_tls(pki: Pki, identity: Identity | None = None) -> FleetTls:
    identity = identity or pki.issue("fleet", "127.0.0.1")
    return FleetTls(identity.cert, identity.key, pki.ca)


def describing_controller(peers: list[str]) -> Callable[[trio.abc.Stream], object]:
    """A controller as far as DescribeCluster goes; notes each TLS peer certificate's common name."""

    async def handle(stream: trio.abc.Stream) -> None:
        frames = FrameBuffer()
        async with stream:
            try:
                while data := await stream.receive_some(65536):
                    if isinstance(stream, trio.SSLStream) and not peers:
                        subject = dict(item[0] for item in stream.getpeercert()["subject"])
                        peers.append(str(subject["commonName"]))
                    frames.receive_data(data)
                    while (payload := frames.next_frame()) is not None:
                        request = decode_request(payload)
                        answer = DescribeClusterResponse(cluster_id="c1", controller_id=1)
                        await stream.send_all(encode_response(answer, request.api_version, request.correlation_id))
            except (trio.BrokenResourceError, ProtocolError):
                pass  # a refused handshake, or a TLS hello read as a frame

    return handle


async def serve_controller(nursery: trio.Nursery, context: ssl.SSLContext | None, peers: list[str]) -> int:
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port: int = listeners[0].socket.getsockname()[1]
    wrapped = listeners if context is None else [trio.SSLListener(item, context) for item in listeners]
    await nursery.start(trio.serve_listeners, describing_controller(peers), wrapped)
    return port


async def describe(connection: ControllerConnection) -> object:
    return await connection.request(DescribeClusterRequest(), 0, 5.0)


async def test_a_controller_connection_over_tls_presents_the_fleets_certificate(
    pki: Pki, nursery: trio.Nursery
) -> None:
    peers: list[str] = []
    port = await serve_controller(nursery, pki.server_context(pki.issue("controller", "127.0.0.1")), peers)
    connection = ControllerConnection([("127.0.0.1", port)], "broker-1", tls=fleet_tls(pki).client_context())
    for _ in range(2):  # one connection, kept
        response = await describe(connection)
        assert isinstance(response, DescribeClusterResponse) and response.cluster_id == "c1"
    assert peers == ["fleet"]
    await connection.drop()


async def test_the_controllers_certificate_must_name_the_host_dialled(pki: Pki, nursery: trio.Nursery) -> None:
    peers: list[str] = []
    elsewhere = pki.server_context(pki.issue("controller", "controller.example.com"))
    port = await serve_controller(nursery, elsewhere, peers)
    connection = ControllerConnection([("127.0.0.1", port)], "broker-1", tls=fleet_tls(pki).client_context())
    with pytest.raises(ConnectionLost) as lost:
        await describe(connection)
    assert not lost.value.sent, "no connection was opened: nothing was sent"
    assert "TLS handshake failed" in str(lost.value) and "mismatch" in str(lost.value), lost.value
    assert peers == []


async def test_a_controller_from_another_ca_is_refused(pki: Pki, tmp_path: Path, nursery: trio.Nursery) -> None:
    stranger = Pki(tmp_path / "other")
    port = await serve_controller(nursery, stranger.server_context(stranger.issue("controller", "127.0.0.1")), [])
    connection = ControllerConnection([("127.0.0.1", port)], "broker-1", tls=fleet_tls(pki).client_context())
    with pytest.raises(ConnectionLost) as lost:
        await describe(connection)
    assert not lost.value.sent and "certificate verify failed" in str(lost.value)


async def test_a_tls_connection_to_a_plain_controller_cannot_be_opened(pki: Pki, nursery: trio.Nursery) -> None:
    port = await serve_controller(nursery, None, [])
    connection = ControllerConnection([("127.0.0.1", port)], "broker-1", tls=fleet_tls(pki).client_context())
    with pytest.raises(ConnectionLost) as lost:
        await describe(connection)
    assert not lost.value.sent


# ---------------------------------------------------------------------- the brokers' control listeners
async def ask_api_versions(port: int, tls: FleetTls | None) -> object:
    client = ControllerConnection([("127.0.0.1", port)], "fencer", tls=None if tls is None else tls.client_context())
    try:
        return await client.request(
            ApiVersionsRequest(client_software_name="fencer", client_software_version="0.1"), 3, 5.0
        )
    finally:
        await client.drop()


async def test_a_tls_listener_answers_only_clients_with_a_certificate_from_the_ca(
    pki: Pki, tmp_path: Path, nursery: trio.Nursery
) -> None:
    fleet = fleet_tls(pki)
    listener = BrokerControlListener(1, lambda: 100, tls=fleet.listener_context())
    port = await nursery.start(listener.serve)

    answer = await ask_api_versions(port, fleet_tls(pki, pki.issue("controller", "127.0.0.1")))
    assert isinstance(answer, ApiVersionsResponse)
    assert {entry.api_key for entry in answer.api_keys} >= {ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA}
    assert listener.tls_failures == 0

    stranger = Pki(tmp_path / "other")
    refused: list[ControllerConnection] = [
        ControllerConnection([("127.0.0.1", port)], "fencer", tls=pki.client_context(None)),  # no certificate
        ControllerConnection([("127.0.0.1", port)], "fencer", tls=_trusting(pki, stranger)),  # another CA's
        ControllerConnection([("127.0.0.1", port)], "fencer"),  # not TLS at all
    ]
    for client in refused:
        with pytest.raises(ConnectionLost):
            await client.request(ApiVersionsRequest(), 0, 5.0)
        await client.drop()
    await _until(lambda: listener.tls_failures == 3)
    assert len(listener.received) == 1, "only the first client's ApiVersions was handled"


def _trusting(pki: Pki, stranger: Pki) -> ssl.SSLContext:
    """A client trusting `pki`'s CA (so it accepts the listener) that presents `stranger`'s certificate."""
    context = pki.client_context(None)
    identity = stranger.issue("controller", "127.0.0.1")
    context.load_cert_chain(identity.cert, identity.key)
    return context


async def _until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    with trio.fail_after(timeout):
        while not predicate():
            await trio.sleep(0.005)


# ---------------------------------------------------------------------- contexts and the command line
def test_the_contexts_verify_against_the_ca_alone_and_listeners_require_certificates(pki: Pki) -> None:
    client, listener = fleet_tls(pki).contexts()
    assert client.check_hostname and client.verify_mode.name == "CERT_REQUIRED"
    assert listener.verify_mode.name == "CERT_REQUIRED"
    for context in (client, listener):
        assert len(context.get_ca_certs()) == 1, "that CA alone, no system CAs"
        assert context.minimum_version.name in ("TLSv1_2", "TLSv1_3")


def test_unusable_files_are_one_line_naming_the_flag(pki: Pki, tmp_path: Path) -> None:
    fleet = pki.issue("fleet", "127.0.0.1")
    other_key = pki.issue("other", "127.0.0.1").key
    missing = tmp_path / "missing.pem"
    for tls, expected in (
        (FleetTls(missing, fleet.key, pki.ca), "--tls-cert"),
        (FleetTls(fleet.cert, missing, pki.ca), "--tls-key"),
        (FleetTls(fleet.cert, fleet.key, missing), "--tls-ca"),
        (FleetTls(fleet.cert, other_key, pki.ca), "does not match"),
        (FleetTls(fleet.cert, fleet.key, fleet.key), "--tls-ca"),  # a key is no CA certificate
        (FleetTls(fleet.key, fleet.key, pki.ca), "--tls-cert"),  # nor a certificate
    ):
        with pytest.raises(TlsError) as caught:
            tls.contexts()
        message = str(caught.value)
        assert expected in message and "\n" not in message, message


def test_the_command_line_takes_the_three_flags_together(pki: Pki, tmp_path: Path) -> None:
    fleet = pki.issue("fleet", "127.0.0.1")
    flags = ["--tls-cert", str(fleet.cert), "--tls-key", str(fleet.key), "--tls-ca", str(pki.ca)]
    assert parse_run(flags, "fleet").config.tls == FleetTls(fleet.cert, fleet.key, pki.ca)
    assert parse_run([], "fleet").config.tls is None
    with pytest.raises(UsageError, match="--tls-ca missing"):
        parse_run(flags[:4], "fleet")
    with pytest.raises(UsageError, match="--tls-cert, --tls-key missing"):
        parse_run(flags[4:], "fleet")
    quorum = parse_run([*flags, "--quorum", "3", "--quorum-data-dir", str(tmp_path / "q")], "fleet").quorum
    assert quorum is not None and quorum.tls == FleetTls(fleet.cert, fleet.key, pki.ca)  # its nodes serve TLS


def test_a_bad_path_is_one_line_and_exit_2(pki: Pki, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fleet = pki.issue("fleet", "127.0.0.1")
    missing = tmp_path / "missing.pem"
    status = run_command(["--tls-cert", str(fleet.cert), "--tls-key", str(missing), "--tls-ca", str(pki.ca)], "fleet")
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines() == [f"fleet: error: --tls-key {missing}: No such file or directory"]
