"""The bounds of a connection, over a real socket pair against a host that plays the writer:
memory across connections (a shared budget, reserved at each frame's prefix), a trickled frame
that is not activity, and a large frame decoded in a worker thread.
"""

from __future__ import annotations

import threading

import pytest
import trio

from controller.server import connection as connection_module
from controller.server.budget import MemoryBudget
from controller.server.pending import LARGE_FRAME_BYTES

from .connection_peer import (
    Host,
    alter_partition,
    closed_by_daemon,
    correlation_of,
    open_pair,
    read_frames,
    request,
    send_all,
    until,
)


async def test_bytes_of_an_unfinished_frame_are_not_activity(nursery: trio.Nursery) -> None:
    pair = open_pair(Host(), nursery)
    data = request(1)
    started = pair.connection.last_activity
    for count, byte in enumerate(data[:-1], 1):  # trickled: every byte arrives, none finishes the frame
        pair.peer.send(bytes([byte]))
        await until(lambda: pair.connection.buffer.buffered == count)  # noqa: B023 - awaited here
    assert pair.connection.last_activity == started, "a byte of an unfinished frame reset the idle timer"
    assert pair.connection.idle_for(trio.current_time()) > 0
    pair.peer.send(data[-1:])
    await pair.host.next_request(1)
    assert pair.connection.last_activity > started  # a whole frame is activity
    assert pair.connection.idle_for(trio.current_time() + 100) == 0, "a request in flight is never idle"


async def test_a_small_budget_bounds_slow_big_frames_across_connections(nursery: trio.Nursery) -> None:
    """Four connections each start a ~300 KB frame and send it slowly; the budget holds two. The
    other two stop reading after the prefix, and are served once answers release memory."""
    body, data = alter_partition(1, 11_000)
    size = len(data) - 4
    host = Host(budget=MemoryBudget(2 * size + size // 2))
    budget = host.budget
    pairs = [open_pair(host, nursery) for _ in range(4)]

    def within_budget() -> None:  # nothing here is read whole in one read, so nothing is forced
        assert budget.used <= budget.capacity
        assert sum(p.connection.buffer.buffered for p in pairs) <= budget.used + len(pairs) * 65536

    for p in pairs:
        p.peer.send(data[:1024])
    await until(lambda: budget.waiting == 2)
    reserved = [p for p in pairs if p.connection.reserved]
    waiting = [p for p in pairs if not p.connection.reserved]
    assert len(reserved) == 2 and budget.used == 2 * size
    within_budget()
    for p in waiting:
        p.peer.send(data[1024:9216])
    await trio.sleep(0.05)
    assert [p.connection.buffer.buffered for p in waiting] == [1024] * 2, "read past a prefix with no memory"
    assert all(p.connection.busy for p in waiting), "waiting for memory is not idle"
    for p in reserved:
        await send_all(p.peer, data[1024:])
    first, second = await host.next_request(1), await host.next_request(2)
    assert first.request is not None and first.request.body == body
    assert budget.used == 2 * size and budget.waiting == 2, "requests in flight hold their memory"
    within_budget()
    host.answer(first)  # its memory goes to the first connection in line
    await until(lambda: budget.waiting == 1)
    within_budget()
    host.answer(second)
    await until(lambda: budget.waiting == 0)
    async with trio.open_nursery() as senders:
        for p in waiting:
            senders.start_soon(send_all, p.peer, data[9216:])
    host.answer(await host.next_request(3))
    host.answer(await host.next_request(4))
    for p in pairs:
        assert [correlation_of(answer) for answer in await read_frames(p.peer, 1)] == [1]
    assert budget.used == 0
    for p in pairs:  # a frame begun on each, then every peer leaves: everything is released
        p.peer.send(data[:1024])
    await until(lambda: budget.waiting == 2)
    for p in pairs:
        p.peer.close()
    with trio.fail_after(10):
        for p in pairs:
            await p.done.wait()
    assert budget.used == 0 and budget.waiting == 0


async def test_memory_is_released_whatever_ends_the_request_or_the_connection(nursery: trio.Nursery) -> None:
    _, data = alter_partition(1, 11_000)
    size = len(data) - 4
    host = Host(budget=MemoryBudget(size))
    budget = host.budget
    refused, waiter, pipelined = (open_pair(host, nursery) for _ in range(3))
    refused.peer.send(data[:4] + b"\x03\xe7" + data[6:1024])  # api key 999, known once the frame is whole
    await until(lambda: budget.used == size)
    waiter.peer.send(data[:1024])
    await until(lambda: budget.waiting == 1)
    waiter.connection.stop()  # closed while in line (an idle sweep, a shutdown)
    await until(waiter.done.is_set)
    assert budget.waiting == 0 and budget.used == size
    await send_all(refused.peer, data[1024:])
    await until(refused.done.is_set)
    assert host.invalid == ["unknown_api"] and budget.used == 0
    pipelined.peer.send(request(1) + request(2) + request(3))
    first = await host.next_request(1)
    # the first is in hand and holds its memory; the two read with it wait in the buffer, counted in their turn
    await until(lambda: pipelined.connection.reserved == len(request(1)[4:]) == budget.used)
    host.draining = True  # a shutdown: the first is answered, the held ones dropped
    pipelined.connection.stop()
    host.answer(first)
    await until(pipelined.done.is_set)
    assert budget.used == 0


def blocking_large_decodes(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make the decode of large frames wait for `release` (after setting `entered`); on the event
    loop that wait would freeze every connection, so it gives up after 10 s and fails the test."""
    entered, release = threading.Event(), threading.Event()
    decode = connection_module.decode_served

    def blocked(payload: bytes, *, allowed: frozenset[int]) -> object:
        if len(payload) > LARGE_FRAME_BYTES:
            entered.set()
            assert release.wait(10), "the decode of a large frame held the event loop"
        return decode(payload, allowed=allowed)

    monkeypatch.setattr(connection_module, "decode_served", blocked)
    return entered, release


async def test_a_large_frame_is_decoded_in_a_thread_while_others_are_answered(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = blocking_large_decodes(monkeypatch)
    body, data = alter_partition(7, 200_000)
    assert len(data) > 5 * LARGE_FRAME_BYTES
    host = Host(max_frame_bytes=16 << 20)
    large, small = open_pair(host, nursery), open_pair(host, nursery)
    nursery.start_soon(send_all, large.peer, data)
    assert await trio.to_thread.run_sync(entered.wait, 10)
    small.peer.send(request(1))
    answered = await host.next_request(1)  # while the large frame's decode is blocked
    assert answered.connection_id == small.connection.id
    host.answer(answered)
    assert [correlation_of(answer) for answer in await read_frames(small.peer, 1)] == [1]
    assert large.connection.in_flight is not None and large.connection.busy
    release.set()
    decoded = await host.next_request(2)
    assert decoded.connection_id == large.connection.id
    assert decoded.request is not None and decoded.request.body == body
    assert decoded.request.header.correlation_id == 7
    host.answer(decoded)
    assert [correlation_of(answer) for answer in await read_frames(large.peer, 1)] == [7]
    assert host.budget.used == 0


async def test_a_large_frame_still_decoding_when_the_daemon_drains_is_dropped(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = blocking_large_decodes(monkeypatch)
    _, data = alter_partition(7, 60_000)
    host = Host(max_frame_bytes=16 << 20)
    large = open_pair(host, nursery)
    nursery.start_soon(send_all, large.peer, data)
    assert await trio.to_thread.run_sync(entered.wait, 10)
    host.draining = True
    large.connection.stop()
    await trio.sleep(0.05)
    assert not large.done.is_set(), "closed while its request was still being decoded"
    release.set()
    assert await closed_by_daemon(large)
    assert host.submitted == [] and host.budget.used == 0  # never handed to a writer that is stopping
