"""The metrics listener (controller.http) over real sockets on 127.0.0.1, port 0."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial

import pytest
import trio

from controller.core import ControllerCore
from controller.http import MAX_HEAD_BYTES, serve_http
from controller.metrics import ControllerMetrics, state_json

from .harness import Harness

IDLE_TIMEOUT_S = 0.2


@dataclass
class Server:
    port: int
    metrics: ControllerMetrics
    core: ControllerCore | None = None


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes


@pytest.fixture
async def server(nursery: trio.Nursery) -> Server:
    box = Server(port=0, metrics=ControllerMetrics(lambda: box.core))
    serve = partial(serve_http, "127.0.0.1", 0, box.metrics, lambda: box.core, idle_timeout_s=IDLE_TIMEOUT_S)
    box.port = await nursery.start(serve)
    return box


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


def cluster() -> ControllerCore:
    h = Harness()
    h.start_brokers(1, 2, 3)
    h.create_topic("orders", partitions=2, replication_factor=3)
    return h.core


# ---------------------------------------------------------------------------- routes
async def test_healthz_is_503_while_starting_then_200(server: Server) -> None:
    starting = await get(server.port, "/healthz")
    assert (starting.status, starting.body) == (503, b"starting")
    server.core = cluster()
    ready = await get(server.port, "/healthz")
    assert (ready.status, ready.body) == (200, b"ok")
    assert ready.headers["content-type"].startswith("text/plain")


async def test_metrics_serves_the_prometheus_text_format(server: Server) -> None:
    server.core = cluster()
    server.metrics.request(56, 3, 0, latency_s=0.001, queue_s=0.0005)
    reply = await get(server.port, "/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = reply.body.decode()
    assert 'fencer_requests_total{api="AlterPartition",error="NONE",version="3"} 1.0' in text
    assert "fencer_controller_active_broker_count 3.0" in text
    assert "fencer_controller_global_partition_count 2.0" in text


async def test_metrics_are_served_before_the_core_exists_and_ignore_a_query_string(server: Server) -> None:
    reply = await get(server.port, "/metrics?name[]=fencer_requests_total")
    assert reply.status == 200
    assert b"# TYPE fencer_requests_total counter" in reply.body


async def test_state_serves_state_json(server: Server) -> None:
    assert (await get(server.port, "/state")).status == 503
    server.core = cluster()
    reply = await get(server.port, "/state")
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert json.loads(reply.body) == state_json(server.core)


async def test_unknown_path_is_404_and_other_methods_405(server: Server) -> None:
    assert (await get(server.port, "/")).status == 404
    assert (await get(server.port, "/metrics/extra")).status == 404
    refused = await get(server.port, "/metrics", method="POST")
    assert refused.status == 405
    assert refused.headers["allow"] == "GET"
    assert (await get(server.port, "/state", method="DELETE")).status == 405


async def test_head_requests_get_no_body(server: Server) -> None:
    raw = await exchange(server.port, b"HEAD /healthz HTTP/1.1\r\n\r\n")
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 405 ")
    assert body == b""


async def test_http_1_0_and_bare_newlines_are_understood(server: Server) -> None:
    server.core = cluster()
    reply = parse(await exchange(server.port, b"GET /healthz HTTP/1.0\nUser-Agent: probe\n\n"))
    assert (reply.status, reply.body) == (200, b"ok")


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
        b"GET metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/2.0\r\n\r\n",
        b"GET  /metrics HTTP/1.1\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nno colon here\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nName : spaced\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\n folded: line\r\n\r\n",
        b"\r\n\r\n",
    ],
)
async def test_malformed_requests_are_400_and_closed(server: Server, raw: bytes) -> None:
    assert parse(await exchange(server.port, raw)).status == 400
    assert (await get(server.port, "/healthz")).status == 503


async def test_an_oversized_header_is_400(server: Server) -> None:
    raw = b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * (MAX_HEAD_BYTES + 100) + b"\r\n\r\n"
    assert parse(await exchange(server.port, raw)).status == 400


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
    server.core = cluster()
    silent = await trio.open_tcp_stream("127.0.0.1", server.port)  # holds its connection open
    async with silent:
        replies: list[Reply] = []

        async def fetch() -> None:
            replies.append(await get(server.port, "/healthz"))

        async with trio.open_nursery() as nursery:
            for _ in range(20):
                nursery.start_soon(fetch)
        assert [reply.status for reply in replies] == [200] * 20
