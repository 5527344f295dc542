"""A fleet connection moves through its controllers as a Kafka broker does through its quorum: on a
NOT_CONTROLLER answer, a failed connect, a connection broken or timed out mid-exchange; never with one
address, and never because the fleet dropped the connection itself (a fault). Real TCP peers each."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import trio

from broker_sim.shell.connection import (
    CONNECT_FAILED,
    CONNECTION_LOST,
    NOT_CONTROLLER,
    ConnectionLost,
    ControllerConnection,
)
from protocol.error_codes import ErrorCode
from protocol.framing import FrameBuffer
from protocol.messages.describe_cluster import DescribeClusterRequest, DescribeClusterResponse
from protocol.registry import decode_request, encode_response
from tests.e2e.daemon_process import free_port

from ..not_controller_peer import not_controller_peer

Switch = tuple[str, str, str, str]


async def answer_describe_cluster(stream: trio.SocketStream) -> None:
    """The active controller, as far as DescribeCluster goes."""
    frames = FrameBuffer()
    async with stream:
        while data := await stream.receive_some(65536):
            frames.receive_data(data)
            while (payload := frames.next_frame()) is not None:
                request = decode_request(payload)
                answer = DescribeClusterResponse(cluster_id="c1", controller_id=1)
                await stream.send_all(encode_response(answer, request.api_version, request.correlation_id))


async def never_answer(stream: trio.SocketStream) -> None:
    async with stream:
        while await stream.receive_some(65536):
            pass


async def serve(nursery: trio.Nursery, handler: object) -> int:
    listeners = await nursery.start(trio.serve_tcp, handler, 0)
    port: int = listeners[0].socket.getsockname()[1]
    return port


@pytest.fixture
async def active(nursery: trio.Nursery) -> AsyncIterator[int]:
    yield await serve(nursery, answer_describe_cluster)


def connection(*ports: int) -> tuple[ControllerConnection, list[Switch]]:
    switches: list[Switch] = []

    def switched(before: str, after: str, reason: str, api_name: str, detail: str) -> None:
        switches.append((before, after, reason, api_name))

    return ControllerConnection([("127.0.0.1", port) for port in ports], "test", None, switched), switches


async def describe(link: ControllerConnection) -> DescribeClusterResponse:
    response = await link.request(DescribeClusterRequest(), 0, 5.0)
    assert isinstance(response, DescribeClusterResponse)
    return response


async def test_it_moves_on_a_failed_connect_and_on_not_controller_and_stays_at_the_active_one(active: int) -> None:
    dead = free_port()
    async with not_controller_peer() as standby:
        link, switches = connection(dead, standby.port, active)
        with pytest.raises(ConnectionLost) as lost:
            await describe(link)
        assert not lost.value.sent
        assert (await describe(link)).error_code == ErrorCode.NOT_CONTROLLER  # returned, for the caller to retry
        for _ in range(3):
            assert (await describe(link)).cluster_id == "c1"
        assert link.peer == f"127.0.0.1:{active}"
    assert switches == [
        (f"127.0.0.1:{dead}", f"127.0.0.1:{standby.port}", CONNECT_FAILED, "DescribeCluster"),
        (f"127.0.0.1:{standby.port}", f"127.0.0.1:{active}", NOT_CONTROLLER, "DescribeCluster"),
    ]
    await link.drop()


async def test_the_list_is_a_ring() -> None:
    dead = free_port()
    async with not_controller_peer() as standby:
        link, switches = connection(standby.port, dead)
        await describe(link)
        with pytest.raises(ConnectionLost):
            await describe(link)
        assert link.peer == f"127.0.0.1:{standby.port}"
        await link.drop()
    assert [(before, after) for before, after, *_ in switches] == [
        (f"127.0.0.1:{standby.port}", f"127.0.0.1:{dead}"),
        (f"127.0.0.1:{dead}", f"127.0.0.1:{standby.port}"),
    ]


async def test_one_address_never_moves() -> None:
    async with not_controller_peer() as standby:
        link, switches = connection(standby.port)
        for _ in range(2):
            assert (await describe(link)).error_code == ErrorCode.NOT_CONTROLLER
        await link.drop()
    link, switches = connection(free_port())
    with pytest.raises(ConnectionLost):
        await describe(link)
    assert switches == [] and link.index == 0


async def test_a_drop_of_the_fleets_own_stays_a_timeout_moves(nursery: trio.Nursery, active: int) -> None:
    silent = await serve(nursery, never_answer)
    link, switches = connection(silent, active)
    failures: list[ConnectionLost] = []

    async def ask() -> None:
        try:
            await link.request(DescribeClusterRequest(), 0, 30.0)
        except ConnectionLost as exc:
            failures.append(exc)

    async with trio.open_nursery() as asking:
        asking.start_soon(ask)
        await trio.sleep(0.2)
        await link.drop()  # a drop-connection fault, mid-exchange
    assert [failure.dropped for failure in failures] == [True]
    assert switches == [] and link.peer == f"127.0.0.1:{silent}"
    with pytest.raises(ConnectionLost):
        await link.request(DescribeClusterRequest(), 0, 0.3)  # no answer in time: a broken controller
    assert switches == [(f"127.0.0.1:{silent}", f"127.0.0.1:{active}", CONNECTION_LOST, "DescribeCluster")]
    assert (await describe(link)).cluster_id == "c1"
    await link.drop()
