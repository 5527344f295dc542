"""The metrics listener (controller.server.http) over real sockets on 127.0.0.1, port 0."""

from __future__ import annotations

import json
import logging
import socket
import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from controller.engine import ControllerEngine
from controller.server.engine_views import StateView
from controller.server.http import BODY_BLOCK_BYTES, MAX_HEAD_BYTES, build_state_body, serve_http
from controller.server.metrics import ControllerMetrics
from controller.server.state_json import PARTITIONS_PER_PIECE, state_json
from controller.state.frozen import FrozenState

from ..harness import Harness
from ..test_engine import workload

IDLE_TIMEOUT_S = 0.2
GATE_TIMEOUT_S = 5.0


@dataclass
class Server:
    port: int
    metrics: ControllerMetrics
    #: what the server reads (the engine in the daemon; a harness's core has the same methods)
    engine: StateView | None = None


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Gate:
    """A /state body builder that, in its worker thread, waits until the test opens the gate."""

    entered: threading.Event = field(default_factory=threading.Event)
    opened: threading.Event = field(default_factory=threading.Event)
    timed_out: bool = False  # the gate was never opened: whoever waited for the build, waited in vain

    def __call__(self, frozen: FrozenState) -> list[bytes]:
        self.entered.set()
        if not self.opened.wait(GATE_TIMEOUT_S):
            self.timed_out = True
        return build_state_body(frozen)

    async def wait_entered(self) -> None:
        assert await trio.to_thread.run_sync(self.entered.wait, GATE_TIMEOUT_S), "the build never started"


async def start_server(nursery: trio.Nursery, **options: Any) -> Server:
    box = Server(port=0, metrics=ControllerMetrics(lambda: box.engine))
    serve = partial(
        serve_http, "127.0.0.1", 0, box.metrics, lambda: box.engine, idle_timeout_s=IDLE_TIMEOUT_S, **options
    )
    box.port = await nursery.start(serve)
    return box


@pytest.fixture
async def server(nursery: trio.Nursery) -> Server:
    return await start_server(nursery)


async def exchange(port: int, raw: bytes) -> bytes:
    """Send `raw`, then read until the server closes (within 2 s)."""
    with trio.fail_after(2):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        async with stream:
            if raw:
                await stream.send_all(raw)
            received = bytearray()
            while chunk := await stream.receive_some(65536):
                received += chunk
            return bytes(received)


def parse(raw: bytes) -> Reply:
    head, _, body = raw.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("ascii").split("\r\n")
    version, status, _reason = status_line.split(" ", 2)
    assert version == "HTTP/1.1"
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    assert int(headers["content-length"]) == len(body)
    assert headers["connection"] == "close"
    return Reply(int(status), headers, body)


async def get(port: int, path: str, method: str = "GET") -> Reply:
    return parse(await exchange(port, f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()))


def cluster() -> StateView:
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("orders", partitions=2, replication_factor=3)
    return h.core


# ---------------------------------------------------------------------------- routes
async def test_healthz_is_503_while_starting_then_200(server: Server) -> None:
    starting = await get(server.port, "/healthz")
    assert (starting.status, starting.body) == (503, b"starting\n")
    server.engine = cluster()
    ready = await get(server.port, "/healthz")
    assert (ready.status, ready.body) == (200, b"ok\n")
    assert ready.headers["content-type"].startswith("text/plain")


async def test_metrics_serves_the_prometheus_text_format(server: Server) -> None:
    server.engine = cluster()
    server.metrics.request(56, 3, 0, latency_s=0.001, queue_s=0.0005)
    reply = await get(server.port, "/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = reply.body.decode()
    assert 'fencer_requests_total{api="AlterPartition",error="NONE",version="3"} 1.0' in text
    assert "fencer_controller_active_broker_count 3.0" in text
    assert "fencer_controller_global_partition_count 2.0" in text


async def test_metrics_are_served_before_the_engine_exists_and_ignore_a_query_string(server: Server) -> None:
    reply = await get(server.port, "/metrics?name[]=fencer_requests_total")
    assert reply.status == 200
    assert b"# TYPE fencer_requests_total counter" in reply.body


async def test_state_serves_state_json(server: Server) -> None:
    assert (await get(server.port, "/state")).status == 503
    server.engine = cluster()
    reply = await get(server.port, "/state")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert json.loads(reply.body) == state_json(server.engine)


async def test_state_of_many_partitions_is_state_json_of_that_state(server: Server) -> None:
    h = Harness()
    h.start_brokers(1, 2, 3)
    for name in ("big", "small", "another"):  # "big" spans several pieces and the body several blocks
        h.create_topic(name, partitions=PARTITIONS_PER_PIECE * 4 + 7 if name == "big" else 3, replication_factor=3)
    server.engine = h.core
    reply = await get(server.port, "/state")
    assert reply.status == 200
    assert len(reply.body) > 2 * BODY_BLOCK_BYTES
    assert json.loads(reply.body) == state_json(h.core)


async def test_an_engine_is_served_through_its_view(server: Server, tmp_path: Path) -> None:
    """The daemon gives the engine itself: /healthz, /state and the cluster gauges read its
    `freeze()` and `counts()`, which are its core's."""
    engine = ControllerEngine.start(tmp_path / "data", fsync=False, now_ns=0)
    try:
        workload(engine, rounds=0)  # brokers 1-3, "orders" with 4 partitions of 3 replicas
        server.engine = engine
        assert (await get(server.port, "/healthz")).status == 200
        reply = await get(server.port, "/state")
        assert reply.status == 200
        document = json.loads(reply.body)
        assert document == state_json(engine) == state_json(engine.core.freeze())
        assert [topic["name"] for topic in document["topics"]] == ["orders"]
        text = (await get(server.port, "/metrics")).body.decode()
        assert "fencer_controller_active_broker_count 3.0" in text
        assert "fencer_controller_global_partition_count 4.0" in text
    finally:
        engine.close()


async def test_the_server_answers_healthz_and_metrics_while_state_is_being_built(nursery: trio.Nursery) -> None:
    gate = Gate()
    server = await start_server(nursery, state_body=gate)
    server.engine = cluster()
    replies: dict[str, Reply] = {}

    async def fetch_state() -> None:
        replies["state"] = await get(server.port, "/state")

    async with trio.open_nursery() as requests:
        requests.start_soon(fetch_state)
        await gate.wait_entered()
        # the build is held in its worker thread; the same server still answers
        assert (await get(server.port, "/healthz")).status == 200
        assert (await get(server.port, "/metrics")).status == 200
        assert "state" not in replies
        gate.opened.set()
    assert not gate.timed_out
    assert json.loads(replies["state"].body) == state_json(server.engine)


async def test_state_is_the_state_frozen_when_its_build_started(nursery: trio.Nursery) -> None:
    """The state is frozen on the event loop; changes replayed while the body is being built are
    not in it: no mix of two states."""
    gate = Gate()
    server = await start_server(nursery, state_body=gate)
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("orders", partitions=2, replication_factor=3)
    server.engine = h.core
    before = state_json(h.core)
    replies: dict[str, Reply] = {}
    frozen_on: list[threading.Thread] = []
    freeze = h.core.freeze

    def recorded_freeze() -> FrozenState:
        frozen_on.append(threading.current_thread())
        return freeze()

    h.core.freeze = recorded_freeze  # type: ignore[method-assign]

    async def fetch_state() -> None:
        replies["state"] = await get(server.port, "/state")

    async with trio.open_nursery() as requests:
        requests.start_soon(fetch_state)
        await gate.wait_entered()
        h.create_topic("later", partitions=2, replication_factor=3)
        h.alter_isr("orders", 0, [h.partition("orders", 0).leader])
        h.register(4)
        assert state_json(freeze()) != before
        gate.opened.set()
    assert json.loads(replies["state"].body) == before
    assert frozen_on == [threading.current_thread()]  # frozen on the event loop's thread, the test's


async def test_a_client_that_reads_nothing_of_a_large_body_is_closed(
    nursery: trio.Nursery, caplog: pytest.LogCaptureFixture
) -> None:
    block = b" " * BODY_BLOCK_BYTES
    server = await start_server(nursery, state_body=lambda frozen: [block] * 64)  # 16 MiB, far over the buffers
    server.engine = cluster()
    client = trio.socket.socket()
    client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
    await client.connect(("127.0.0.1", server.port))
    async with trio.SocketStream(client) as stream:
        with caplog.at_level(logging.DEBUG, logger="fencer.http"):
            await stream.send_all(b"GET /state HTTP/1.1\r\nHost: localhost\r\n\r\n")
            with trio.fail_after(GATE_TIMEOUT_S):
                while "read nothing" not in caplog.text:
                    await trio.sleep(0.02)
        received = bytearray()
        with trio.fail_after(GATE_TIMEOUT_S):
            try:
                while chunk := await stream.receive_some(1 << 20):
                    received += chunk
            except trio.BrokenResourceError:
                pass  # reset: also closed
    assert received.startswith(b"HTTP/1.1 200 OK")
    assert f"Content-Length: {64 * BODY_BLOCK_BYTES}".encode() in received
    assert len(received) < 64 * BODY_BLOCK_BYTES
    assert (await get(server.port, "/healthz")).status == 200


async def test_unknown_path_is_404_and_other_methods_405(server: Server) -> None:
    assert (await get(server.port, "/")).status == 404
    assert (await get(server.port, "/metrics/extra")).status == 404
    refused = await get(server.port, "/metrics", method="POST")
    assert refused.status == 405
    assert refused.headers["allow"] == "GET"
    assert (await get(server.port, "/state", method="DELETE")).status == 405


async def test_head_requests_get_no_body(server: Server) -> None:
    raw = await exchange(server.port, b"HEAD /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405 ")
    assert body == b""


async def test_http_1_0_and_bare_newlines_are_understood(server: Server) -> None:
    server.engine = cluster()
    reply = parse(await exchange(server.port, b"GET /healthz HTTP/1.0\nUser-Agent: probe\n\n"))
    assert (reply.status, reply.body) == (200, b"ok\n")


async def test_http_1_0_needs_no_host_and_is_answered_with_connection_close(server: Server) -> None:
    raw = await exchange(server.port, b"GET /metrics HTTP/1.0\r\n\r\n")
    assert parse(raw).status == 200  # parse: HTTP/1.1 in the status line, Connection: close


async def test_an_http_1_1_request_without_host_is_400(server: Server) -> None:
    """RFC 9112, 3.2: a server MUST answer 400 to an HTTP/1.1 request without Host."""
    reply = parse(await exchange(server.port, b"GET /metrics HTTP/1.1\r\n\r\n"))
    assert reply.status == 400
    assert b"Host" in reply.body


async def test_a_request_split_across_many_tcp_writes_is_answered(server: Server) -> None:
    server.engine = cluster()
    raw = b"GET /healthz?probe=1 HTTP/1.1\r\nHost: localhost\r\nUser-Agent: trickle\r\n\r\n"
    client = trio.socket.socket()
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each write its own segment
    await client.connect(("127.0.0.1", server.port))
    async with trio.SocketStream(client) as stream:
        for start in range(0, len(raw), 3):
            await stream.send_all(raw[start : start + 3])
            await trio.sleep(0.005)  # well within the idle timeout: the server reads each piece alone
        received = bytearray()
        with trio.fail_after(2):
            while chunk := await stream.receive_some(65536):
                received += chunk
    reply = parse(bytes(received))
    assert (reply.status, reply.body) == (200, b"ok\n")


async def test_pipelined_requests_get_the_first_answer_then_the_close(server: Server) -> None:
    """No keep-alive: the second request is never answered, and the connection closes cleanly
    after the first answer (no reset that could cost the client that answer)."""
    server.engine = cluster()
    first = b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"
    second = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"
    raw = await exchange(server.port, first + second)
    assert raw.count(b"HTTP/1.1 ") == 1
    reply = parse(raw)  # the whole of what arrived is one response: its Content-Length says so
    assert (reply.status, reply.body) == (200, b"ok\n")


async def test_a_request_body_is_never_read(server: Server) -> None:
    """A request announcing 1 GiB of body is answered from its head at once; the body never arrives."""
    raw = b"POST /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1073741824\r\n\r\n"
    started = trio.current_time()
    reply = parse(await exchange(server.port, raw))
    assert reply.status == 405
    assert trio.current_time() - started < IDLE_TIMEOUT_S


async def test_a_failing_route_is_answered_500_and_the_server_keeps_serving(server: Server) -> None:
    def broken() -> bytes:
        raise RuntimeError("boom")

    server.metrics.render = broken  # type: ignore[method-assign]
    assert (await get(server.port, "/metrics")).status == 500
    assert (await get(server.port, "/healthz")).status == 503


# ---------------------------------------------------------------------------- hostile clients
@pytest.mark.parametrize(
    "raw",
    [
        b"HELLO\r\n\r\n",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",  # a TLS ClientHello's first bytes
        b"GET /metrics\r\n\r\n",
        b"GET metrics HTTP/1.1\r\nHost: localhost\r\n\r\n",
        b"GET /metrics HTTP/2.0\r\n\r\n",
        b"GET  /metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nName : spaced\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\n folded: line\r\n\r\n",
        b"\r\n\r\n",
        b"GET http://localhost/metrics HTTP/1.1\r\nHost: localhost\r\n\r\n",  # absolute-form: a proxy's
        b"GET /metrics HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nContent-Length: -1\r\n\r\n",
    ],
)
async def test_malformed_requests_are_400_and_closed(server: Server, raw: bytes) -> None:
    assert parse(await exchange(server.port, raw)).status == 400
    assert (await get(server.port, "/healthz")).status == 503


async def test_an_oversized_header_is_400(server: Server) -> None:
    raw = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * (MAX_HEAD_BYTES + 100) + b"\r\n\r\n"
    assert parse(await exchange(server.port, raw)).status == 400


async def test_a_whole_head_just_over_the_limit_is_400_however_it_arrives(server: Server) -> None:
    """h11 refuses a head only while it is incomplete; one that arrives whole in a read or two
    is measured too."""
    prefix = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Big: "
    filler = b"a" * (MAX_HEAD_BYTES + 1 - len(prefix) - 4)
    assert parse(await exchange(server.port, prefix + filler + b"\r\n\r\n")).status == 400
    assert parse(await exchange(server.port, prefix + filler[:-1] + b"\r\n\r\n")).status == 200


async def test_a_header_line_that_never_ends_is_refused_once_past_the_head_limit(server: Server) -> None:
    raw = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Endless: " + b"a" * (MAX_HEAD_BYTES + 1)
    reply = parse(await exchange(server.port, raw))  # the client sends no end of line, and waits
    assert reply.status == 400


async def test_an_endless_head_is_refused_without_waiting_for_its_end(server: Server) -> None:
    raw = b"GET /metrics HTTP/1.1\r\n" + b"X-Filler: yes\r\n" * (MAX_HEAD_BYTES // 15 + 10)
    assert parse(await exchange(server.port, raw)).status == 400


async def test_a_silent_client_is_closed_after_the_idle_timeout(server: Server) -> None:
    started = trio.current_time()
    assert await exchange(server.port, b"") == b""
    assert trio.current_time() - started >= IDLE_TIMEOUT_S * 0.9


async def test_a_client_that_stops_mid_request_is_closed_without_a_response(server: Server) -> None:
    assert await exchange(server.port, b"GET /metr") == b""


async def test_clients_that_vanish_do_not_stop_the_server(server: Server) -> None:
    for raw in (b"", b"GET /metrics HTTP/1.1\r\n\r\n", b"GET /metrics HTTP/1.1\r\n"):
        stream = await trio.open_tcp_stream("127.0.0.1", server.port)
        if raw:
            await stream.send_all(raw)
        await stream.aclose()
    await trio.sleep(0.05)
    assert (await get(server.port, "/healthz")).status == 503


async def test_connections_are_served_concurrently(server: Server) -> None:
    server.engine = cluster()
    silent = await trio.open_tcp_stream("127.0.0.1", server.port)  # holds its connection open
    async with silent:
        replies: list[Reply] = []

        async def fetch() -> None:
            replies.append(await get(server.port, "/healthz"))

        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(fetch)
        assert [reply.status for reply in replies] == [200] * 20
