"""The simulated network: delays, order, partitions that hold bytes, crashes that reset, determinism."""

import errno
import random

import pytest
import trio
import trio.testing

from broker_sim.sim.network import SimNetwork, SimStream

MIN_S, MAX_S = 0.0005, 0.005


async def read_exactly(stream: trio.abc.Stream, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = await stream.receive_some()
        assert chunk, "EOF before the whole message"
        data += chunk
    return data


async def connected(net: SimNetwork, client: str = "a", server: str = "b") -> tuple[trio.abc.Stream, trio.abc.Stream]:
    """A stream from `client` to `server`: (client end, server end)."""
    [listener] = await net.host(server).open_tcp_listeners(0)
    client_end = await net.host(client).open_tcp_stream(server, listener.socket.getsockname()[1])
    return client_end, await listener.accept()


async def test_an_echo_round_trip_takes_two_delays_and_keeps_the_order(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(1), min_delay_s=MIN_S, max_delay_s=MAX_S)
    [listener] = await net.host("broker-1").open_tcp_listeners(9092)

    async def echo() -> None:
        stream = await listener.accept()
        while data := await stream.receive_some():
            await stream.send_all(data)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(echo)
        start = trio.current_time()
        client = await net.host("controller-1").open_tcp_stream("broker-1", 9092)
        assert MIN_S <= trio.current_time() - start <= MAX_S  # a connect takes one delay
        for i in range(50):
            message = f"message {i} ".encode() * (i + 1)
            sent_at = trio.current_time()
            await client.send_all(message)
            assert await read_exactly(client, len(message)) == message
            assert 2 * MIN_S <= trio.current_time() - sent_at <= 2 * MAX_S + 1e-9
        # many sends before any read: the bytes arrive in the order sent
        messages = [f"<{i}>".encode() for i in range(200)]
        for message in messages:
            await client.send_all(message)
        assert await read_exactly(client, sum(map(len, messages))) == b"".join(messages)
        await client.aclose()


async def test_refused_in_use_and_fresh_ports(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(2))
    a, b = net.host("a"), net.host("b")
    with pytest.raises(OSError) as refused:
        await a.open_tcp_stream("b", 9092)
    assert refused.value.errno == errno.ECONNREFUSED
    await b.open_tcp_listeners(9092)
    with pytest.raises(OSError) as in_use:
        await b.open_tcp_listeners(9092, host="0.0.0.0")
    assert in_use.value.errno == errno.EADDRINUSE
    await a.open_tcp_listeners(9092)  # the same port on another host is free
    [first] = await b.open_tcp_listeners(0)
    [second] = await b.open_tcp_listeners(0, host="127.0.0.1")
    assert first.socket.getsockname()[0] == second.socket.getsockname()[0] == "b"
    assert first.socket.getsockname()[1] != second.socket.getsockname()[1]
    await first.aclose()  # closed: its port refuses
    with pytest.raises(OSError) as closed:
        await a.open_tcp_stream("b", first.socket.getsockname()[1])
    assert closed.value.errno == errno.ECONNREFUSED


async def test_a_partition_holds_bytes_until_healed(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(3))
    client, server = await connected(net)
    await client.send_all(b"before ")
    await trio.sleep(1)  # arrived before the cut, unread: the cut does not take it back
    net.partition("a", "b")
    for word in (b"held ", b"in ", b"order"):
        await client.send_all(word)
    assert await server.receive_some() == b"before "
    with trio.move_on_after(10) as waited:
        await server.receive_some()
    assert waited.cancelled_caught
    healed_at = trio.current_time()
    net.heal("a", "b")
    assert await read_exactly(server, len(b"held in order")) == b"held in order"
    assert healed_at + MIN_S <= trio.current_time() <= healed_at + MAX_S + 1e-9


async def test_a_one_way_partition_holds_one_direction(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(4))
    client, server = await connected(net)
    net.partition_one_way("a", "b")
    await client.send_all(b"to b")
    await server.send_all(b"to a")
    assert await client.receive_some() == b"to a"  # b -> a flows
    with trio.move_on_after(10) as waited:
        await server.receive_some()
    assert waited.cancelled_caught
    net.heal()
    assert await server.receive_some() == b"to b"


async def test_a_connect_across_a_cut_hangs_until_healed(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(5))
    [listener] = await net.host("b").open_tcp_listeners(9092)
    net.isolate("b")
    with pytest.raises(trio.TooSlowError), trio.fail_after(5):
        await net.host("a").open_tcp_stream("b", 9092)
    opened: list[tuple[float, trio.abc.Stream]] = []

    async def connect() -> None:
        stream = await net.host("a").open_tcp_stream("b", 9092)
        opened.append((trio.current_time(), stream))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(connect)
        await trio.sleep(3)
        assert not opened
        healed_at = trio.current_time()
        net.heal_host("b")
    assert opened[0][0] >= healed_at
    server = await listener.accept()
    await opened[0][1].send_all(b"hello")
    assert await server.receive_some() == b"hello"


async def test_a_crash_resets_the_streams_and_closes_the_listeners(
    autojump_clock: trio.testing.MockClock,
) -> None:
    net = SimNetwork(random.Random(6))
    client, server = await connected(net)
    other_client, other_server = await connected(net, "a", "c")
    [listener] = await net.host("b").open_tcp_listeners(9092)
    await client.send_all(b"lost in flight")
    async with trio.open_nursery() as nursery:

        async def accept_fails() -> None:
            with pytest.raises(trio.ClosedResourceError):
                await listener.accept()

        nursery.start_soon(accept_fails)
        await trio.sleep(0)
        net.crash("b")
    with pytest.raises(trio.BrokenResourceError):
        await server.receive_some()
    with pytest.raises(trio.BrokenResourceError):
        await client.receive_some()
    with pytest.raises(trio.BrokenResourceError):
        await client.send_all(b"more")
    with pytest.raises(OSError) as refused:
        await net.host("a").open_tcp_stream("b", 9092)
    assert refused.value.errno == errno.ECONNREFUSED
    await other_client.send_all(b"unaffected")  # a stream between other hosts lives on
    assert await other_server.receive_some() == b"unaffected"
    await net.host("b").open_tcp_listeners(9092)  # the restarted host binds again


async def test_cut_streams_resets_the_streams_between_two_hosts(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(7))
    [listener] = await net.host("b").open_tcp_listeners(9092)
    client = await net.host("a").open_tcp_stream("b", 9092)
    server = await listener.accept()
    net.cut_streams("b", "a")
    with pytest.raises(trio.BrokenResourceError):
        await server.send_all(b"x")
    with pytest.raises(trio.BrokenResourceError):
        await client.receive_some()
    again = await net.host("a").open_tcp_stream("b", 9092)  # the listener lives on
    await again.send_all(b"again")
    assert await (await listener.accept()).receive_some() == b"again"


async def test_a_closed_end_gives_the_peer_eof_after_its_bytes(
    autojump_clock: trio.testing.MockClock,
) -> None:
    net = SimNetwork(random.Random(8))
    client, server = await connected(net)
    await client.send_all(b"last words")
    await client.aclose()
    assert await read_exactly(server, len(b"last words")) == b"last words"
    assert await server.receive_some() == b""
    with pytest.raises(trio.ClosedResourceError):
        await client.send_all(b"after close")
    with pytest.raises(trio.ClosedResourceError):
        await client.receive_some()


async def test_two_receivers_on_one_stream_are_refused(autojump_clock: trio.testing.MockClock) -> None:
    net = SimNetwork(random.Random(9))
    _client, server = await connected(net)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(server.receive_some)
        await trio.sleep(0.0001)
        with pytest.raises(trio.BusyResourceError):
            await server.receive_some()
        nursery.cancel_scope.cancel()


async def test_the_streams_keep_trios_stream_contract() -> None:  # on the real clock: its checks spin under autojump
    async def pair() -> tuple[SimStream, SimStream]:
        client, server = await connected(SimNetwork(random.Random(10)))
        assert isinstance(client, SimStream) and isinstance(server, SimStream)
        return client, server

    await trio.testing.check_half_closeable_stream(pair, None)


def scripted_run(seed: int) -> list[list[tuple[float, bytes]]]:
    """Four streams from two clients to an echo server, 80 messages, a partition and a heal: what each
    client received when."""

    async def main() -> list[list[tuple[float, bytes]]]:
        net = SimNetwork(random.Random(seed))
        [listener] = await net.host("server").open_tcp_listeners(9092)
        received: list[list[tuple[float, bytes]]] = [[] for _ in range(4)]

        async def echo(stream: trio.abc.Stream) -> None:
            while data := await stream.receive_some():
                await stream.send_all(data)
            await stream.aclose()

        async def record(stream: trio.abc.Stream, into: list[tuple[float, bytes]]) -> None:
            while data := await stream.receive_some():
                into.append((trio.current_time(), bytes(data)))

        async with trio.open_nursery() as nursery:
            clients: list[SimStream] = []
            for i in range(4):
                client = await net.host(f"client-{i % 2}").open_tcp_stream("server", 9092)
                assert isinstance(client, SimStream)
                clients.append(client)
                nursery.start_soon(echo, await listener.accept())
                nursery.start_soon(record, clients[-1], received[i])
            for n in range(80):
                if n == 30:
                    net.partition("client-1", "server")
                if n == 50:
                    net.heal()
                await clients[n % 4].send_all(f"message {n};".encode() * (n % 7 + 1))
                await trio.sleep(0.002)
            await trio.sleep(1)
            for client in clients:
                await client.send_eof()  # the echo closes, the recorders see EOF
        return received

    return trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_same_seed_gives_the_same_run() -> None:
    first = scripted_run(11)
    assert sum(len(deliveries) for deliveries in first) >= 80
    assert first == scripted_run(11)
    assert [[at for at, _ in d] for d in first] != [[at for at, _ in d] for d in scripted_run(12)]
