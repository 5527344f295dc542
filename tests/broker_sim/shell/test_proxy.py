"""The fleet's TCP proxy (how one controller of its own quorum reaches another) carries real TCP
traffic both ways; `cut()` drops what it carries and black-holes new connections (accepted, never
answered); `heal()` ends the black holes and carries again. Real sockets, an echo upstream."""

from __future__ import annotations

import trio

from broker_sim.shell.proxy import Proxy
from tests.e2e.daemon_process import free_port

QUIET_S = 0.3  # long enough for an echo on loopback, many times over


async def echo(stream: trio.SocketStream) -> None:
    async with stream:
        try:
            while data := await stream.receive_some(65536):
                await stream.send_all(data)
        except trio.BrokenResourceError:
            pass


async def started_proxy(nursery: trio.Nursery, upstream_port: int) -> Proxy:
    proxy = Proxy(("127.0.0.1", upstream_port), "test")
    await nursery.start(proxy.serve)
    return proxy


async def echo_upstream(nursery: trio.Nursery) -> int:
    listeners = await nursery.start(trio.serve_tcp, echo, 0)
    port: int = listeners[0].socket.getsockname()[1]
    return port


async def round_trip(stream: trio.SocketStream, data: bytes) -> bytes:
    await stream.send_all(data)
    received = b""
    while len(received) < len(data):
        chunk = await stream.receive_some(65536)
        if not chunk:
            break
        received += chunk
    return received


async def closed_by_peer(stream: trio.SocketStream) -> bool:
    """The other side closed (EOF or reset) within QUIET_S."""
    with trio.move_on_after(QUIET_S):
        try:
            while await stream.receive_some(65536):
                pass
        except trio.BrokenResourceError:
            pass
        return True
    return False


async def silent(stream: trio.SocketStream) -> bool:
    """Nothing comes back, and the connection stays open, for QUIET_S."""
    with trio.move_on_after(QUIET_S):
        await stream.receive_some(65536)
        return False
    return True


async def test_the_proxy_carries_bytes_both_ways_on_several_connections(nursery: trio.Nursery) -> None:
    proxy = await started_proxy(nursery, await echo_upstream(nursery))
    assert proxy.address[1] != 0
    first = await trio.open_tcp_stream(*proxy.address)
    second = await trio.open_tcp_stream(*proxy.address)
    big = bytes(range(256)) * 4096  # 1 MiB: many reads and writes each way
    assert await round_trip(first, b"ping") == b"ping"
    assert await round_trip(second, big) == big
    assert await round_trip(first, b"again") == b"again"
    assert proxy.carried == 2 and proxy.black_holed == 0
    await first.aclose()
    await second.aclose()


async def test_cut_drops_every_connection_and_black_holes_new_ones_until_heal(nursery: trio.Nursery) -> None:
    proxy = await started_proxy(nursery, await echo_upstream(nursery))
    before = await trio.open_tcp_stream(*proxy.address)
    assert await round_trip(before, b"x") == b"x"
    proxy.cut()
    assert await closed_by_peer(before)  # dropped at once
    during = await trio.open_tcp_stream(*proxy.address)  # accepted: the handshake completes
    await during.send_all(b"anyone there?")
    assert await silent(during)  # ... and nothing comes back: a black hole, not a refusal
    assert proxy.black_holed == 1
    proxy.cut()  # idempotent
    proxy.heal()
    assert await closed_by_peer(during)  # the black hole ends: its peer reconnects
    after = await trio.open_tcp_stream(*proxy.address)
    assert await round_trip(after, b"back") == b"back"
    proxy.heal()  # idempotent
    assert await round_trip(after, b"still") == b"still"
    assert proxy.carried == 2
    await after.aclose()


async def test_an_upstream_that_is_not_there_closes_the_accepted_connection(nursery: trio.Nursery) -> None:
    proxy = await started_proxy(nursery, free_port())
    stream = await trio.open_tcp_stream(*proxy.address)
    assert await closed_by_peer(stream)
    assert proxy.carried == 0


async def test_the_upstream_closing_closes_the_client_side(nursery: trio.Nursery) -> None:
    async def close_after_one(stream: trio.SocketStream) -> None:
        async with stream:
            await stream.send_all(await stream.receive_some(65536))

    listeners = await nursery.start(trio.serve_tcp, close_after_one, 0)
    proxy = await started_proxy(nursery, listeners[0].socket.getsockname()[1])
    stream = await trio.open_tcp_stream(*proxy.address)
    assert await round_trip(stream, b"once") == b"once"
    assert await closed_by_peer(stream)


async def test_cutting_one_proxy_leaves_another_alone(nursery: trio.Nursery) -> None:
    upstream = await echo_upstream(nursery)
    cut, other = await started_proxy(nursery, upstream), await started_proxy(nursery, upstream)
    stream = await trio.open_tcp_stream(*other.address)
    cut.cut()
    assert await round_trip(stream, b"unaffected") == b"unaffected"
