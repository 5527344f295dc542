"""The simulator's network: in-memory TCP between named hosts, on trio's clock, seeded.

Purpose: every program of a simulated cluster (controller daemons, brokers) runs in one `trio.run`
under `trio.testing.MockClock`; each gets a `HostNetwork` (`SimNetwork.host(name)`) in place of
`trio.open_tcp_stream` / `trio.open_tcp_listeners`, and the scenario cuts and heals links on the
`SimNetwork`.

Rules (what it models):
- Addresses are (host name, port). "0.0.0.0", "127.0.0.1" and "localhost" mean the host's own name.
  Port 0 binds the next free port from 40000 (per network); a taken address is EADDRINUSE.
- A connect takes one network delay, then is refused (ECONNREFUSED) when nothing listens there.
- Bytes reach the peer after a delay drawn from [min_delay_s, max_delay_s], in order per direction
  (a chunk never arrives before the one sent ahead of it); a send may arrive as several chunks.
- A partition holds bytes, as TCP retransmits them: nothing crosses a cut direction, and on heal what
  was held arrives one delay after the heal, in order. A connect across a cut (either direction)
  hangs, as a dropped SYN does, until healed; its caller bounds it with its own timeout.
- A crash (or `cut_streams`) resets: both ends of every stream it touches raise
  `trio.BrokenResourceError`, and the bytes in flight are lost. A crash also closes the host's
  listeners (queued connections are reset), so later connects to them are refused.
- Determinism: every random choice comes from the one `random.Random` given, every wait is on
  trio's clock, and everything iterated is insertion-ordered (dicts, deques), never a set.
"""

from __future__ import annotations

import errno
import math
import operator
import random
from collections import deque
from itertools import count

import trio

_LOCAL_NAMES = ("0.0.0.0", "127.0.0.1", "localhost")
_SPLIT_CHANCE = 0.25  # of a send arriving in pieces (exercises the readers' frame reassembly)
Address = tuple[str, int]  # (host name, port)


class _Socket:
    """What callers ask of `listener.socket` / `stream.socket`: the addresses (a listener's peer: its own)."""

    def __init__(self, local: Address, peer: Address) -> None:
        self._local, self._peer = local, peer

    def getsockname(self) -> Address:
        return self._local

    def getpeername(self) -> Address:
        return self._peer


class _Direction:
    """The bytes one end sends the other: in flight (with their arrival times), then delivered."""

    def __init__(self, src: str, dst: str) -> None:
        self.src, self.dst = src, dst
        self.in_flight: deque[tuple[float, bytes | None]] = deque()  # (deliver_at, data); None: EOF
        self.last_deliver_at, self.delivered = -math.inf, bytearray()
        self.eof = self.broken = False  # eof: the EOF has arrived (after every byte sent before it)
        self.changed = trio.Event()  # replaced on every change its reader may wait for

    def notify(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    def settle(self, network: SimNetwork) -> bool:
        """Take in what has arrived by now, unless the direction is held; whether it is held."""
        if network.blocked(self.src, self.dst):
            return True
        while self.in_flight and self.in_flight[0][0] <= trio.current_time():
            piece = self.in_flight.popleft()[1]
            if piece is None:
                self.eof = True
            else:
                self.delivered += piece
        return False


class SimNetwork:
    """The whole network: hosts' listeners, open streams, and the cuts between hosts."""

    def __init__(self, rng: random.Random, *, min_delay_s: float = 0.0005, max_delay_s: float = 0.005) -> None:
        self._rng, self.min_delay_s, self.max_delay_s = rng, min_delay_s, max_delay_s
        self._listeners: dict[Address, SimListener] = {}
        self._streams: dict[int, tuple[SimStream, SimStream]] = {}  # by opening order: (client, server)
        self._cut: dict[tuple[str, str], None] = {}  # (src, dst) directions held; a dict as an ordered set
        self._isolated: dict[str, None] = {}
        self._healed = trio.Event()  # replaced on every heal; hung connects wait on it
        self._ports, self._ephemeral, self._stream_ids = count(40000), count(50000), count()

    def host(self, name: str) -> HostNetwork:
        return HostNetwork(self, name)

    def partition(self, a: str, b: str) -> None:
        self._settle()
        self._cut[(a, b)] = self._cut[(b, a)] = None

    def partition_one_way(self, src: str, dst: str) -> None:
        self._settle()
        self._cut[(src, dst)] = None

    def heal(self, a: str | None = None, b: str | None = None) -> None:
        """Heal a and b (both directions); a alone: `heal_host(a)`; no argument: everything."""
        if a is None:
            self._lift(list(self._cut), list(self._isolated))
        elif b is None:
            self.heal_host(a)
        else:
            self._lift([(a, b), (b, a)], [])

    def isolate(self, name: str) -> None:
        self._settle()
        self._isolated[name] = None

    def heal_host(self, name: str) -> None:
        """Undo `isolate(name)` and every cut with `name` at one end."""
        self._lift([pair for pair in self._cut if name in pair], [name])

    def crash(self, name: str) -> None:
        for stream_id in [i for i, (client, server) in self._streams.items() if name in (client.host, server.host)]:
            self._reset(stream_id)
        for listener in [listener for (host, _), listener in self._listeners.items() if host == name]:
            listener.close()

    def cut_streams(self, a: str, b: str) -> None:
        for stream_id in [i for i, (client, server) in self._streams.items() if {client.host, server.host} == {a, b}]:
            self._reset(stream_id)

    def blocked(self, src: str, dst: str) -> bool:
        """Whether bytes from src to dst are held now."""
        if src == dst:
            return False
        return (src, dst) in self._cut or src in self._isolated or dst in self._isolated

    def delay(self) -> float:
        return self._rng.uniform(self.min_delay_s, self.max_delay_s)

    def _directions(self) -> list[_Direction]:
        return [end.outgoing for pair in self._streams.values() for end in pair]

    def _settle(self) -> None:
        """Before a cut: what has arrived by now stays arrived, whether or not its reader has read it."""
        for d in self._directions():
            d.settle(self)

    def _lift(self, cuts: list[tuple[str, str]], isolated: list[str]) -> None:
        """Lift cuts; what they held arrives one delay from now, in order."""
        held = [d for d in self._directions() if self.blocked(d.src, d.dst)]
        for pair in cuts:
            self._cut.pop(pair, None)
        for name in isolated:
            self._isolated.pop(name, None)
        now = trio.current_time()
        for d in held:
            if not self.blocked(d.src, d.dst) and d.in_flight:
                base = now + self.delay()
                d.in_flight = deque((max(at, base), data) for at, data in d.in_flight)
                d.last_deliver_at = max(d.last_deliver_at, base)
            d.notify()
        self._healed.set()
        self._healed = trio.Event()

    def _reset(self, stream_id: int) -> None:
        for end in self._streams.pop(stream_id, ()):
            end.outgoing.broken = True
            end.outgoing.in_flight.clear()
            end.outgoing.notify()


class HostNetwork:
    """One program's view of the network: what it opens comes from, and binds at, host `name`."""

    def __init__(self, network: SimNetwork, name: str) -> None:
        self.network, self.name = network, name

    def _own(self, host: str | None) -> str:
        return self.name if host is None or host in _LOCAL_NAMES else host

    async def open_tcp_stream(self, host: str, port: int) -> trio.abc.Stream:
        net, host = self.network, self._own(host)
        await trio.sleep(net.delay())
        while net.blocked(self.name, host) or net.blocked(host, self.name):  # a dropped SYN: wait for a heal
            await net._healed.wait()
        listener = net._listeners.get((host, port))
        if listener is None:
            raise OSError(errno.ECONNREFUSED, "Connection refused")
        stream_id, here, there = next(net._stream_ids), (self.name, next(net._ephemeral)), (host, port)
        c2s, s2c = _Direction(self.name, host), _Direction(host, self.name)
        client, server = (
            SimStream(net, stream_id, here, there, c2s, s2c),
            SimStream(net, stream_id, there, here, s2c, c2s),
        )
        client.peer, server.peer = server, client
        net._streams[stream_id] = (client, server)
        listener._pending.append(server)
        listener._changed.set()
        listener._changed = trio.Event()
        return client

    async def open_tcp_listeners(self, port: int, host: str | None = None) -> list[SimListener]:
        await trio.lowlevel.checkpoint()
        net, bind = self.network, self._own(host)
        if bind != self.name:
            raise OSError(errno.EADDRNOTAVAIL, f"Cannot assign requested address {bind!r} on {self.name!r}")
        if port == 0:
            port = next(p for p in net._ports if (bind, p) not in net._listeners)
        if (bind, port) in net._listeners:
            raise OSError(errno.EADDRINUSE, f"Address already in use: {bind}:{port}")
        listener = SimListener(net, (bind, port))
        net._listeners[(bind, port)] = listener
        return [listener]


class SimListener(trio.abc.Listener[trio.abc.Stream]):
    """Connections made to one (host, port), in the order they were made."""

    def __init__(self, network: SimNetwork, address: Address) -> None:
        self._network, self.address, self.socket = network, address, _Socket(address, address)
        self._pending: deque[SimStream] = deque()
        self._changed, self._closed = trio.Event(), False

    async def accept(self) -> SimStream:
        await trio.lowlevel.checkpoint()
        while True:
            if self._closed:
                raise trio.ClosedResourceError("the listener is closed")
            if self._pending:
                return self._pending.popleft()
            await self._changed.wait()

    def close(self) -> None:
        """Stop listening: pending accepts fail, and connections not yet accepted are reset."""
        if self._network._listeners.get(self.address) is self:
            del self._network._listeners[self.address]
        self._closed = True
        while self._pending:
            self._network._reset(self._pending.popleft().stream_id)
        self._changed.set()

    async def aclose(self) -> None:
        self.close()
        await trio.lowlevel.checkpoint()


class SimStream(trio.abc.HalfCloseableStream):
    """One end of a simulated TCP connection."""

    peer: SimStream

    def __init__(
        self, network: SimNetwork, stream_id: int, local: Address, remote: Address, out: _Direction, inc: _Direction
    ) -> None:
        self._network, self.stream_id, self.socket = network, stream_id, _Socket(local, remote)
        self.host, self.outgoing, self.incoming = local[0], out, inc
        self.closed = self._eof_sent = False  # closed: this end (aclose); eof sent: its outgoing direction
        self._sending = self._receiving = False  # trio's rule: one sender and one receiver at a time

    def _enqueue(self, data: bytes | None) -> None:
        d, net, now = self.outgoing, self._network, trio.current_time()
        pieces: list[bytes | None] = [data]
        if data is not None and len(data) > 1 and net._rng.random() < _SPLIT_CHANCE:
            cuts = sorted(net._rng.sample(range(1, len(data)), min(len(data) - 1, net._rng.randint(1, 2))))
            pieces = [data[i:j] for i, j in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        for piece in pieces:
            d.last_deliver_at = max(d.last_deliver_at, now + net.delay())
            d.in_flight.append((d.last_deliver_at, piece))
        d.notify()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self._sending:
            raise trio.BusyResourceError("another task is sending on this stream")
        self._sending = True
        try:
            await trio.lowlevel.checkpoint()
            if self.closed or self._eof_sent:
                raise trio.ClosedResourceError("this end is closed")
            if self.peer.closed:  # once its EOF is here, as TCP's RST to bytes sent to a closed socket
                self.incoming.settle(self._network)
                self.outgoing.broken |= self.incoming.eof
            if self.outgoing.broken:
                raise trio.BrokenResourceError("connection reset")
            if data and not self.peer.closed:  # bytes to a closed end are dropped
                self._enqueue(bytes(data))
        finally:
            self._sending = False

    async def wait_send_all_might_not_block(self) -> None:
        if self._sending:
            raise trio.BusyResourceError("another task is sending on this stream")
        await trio.lowlevel.checkpoint()  # the buffer is unbounded: never a wait
        if self.closed:
            raise trio.ClosedResourceError("this end is closed")

    async def send_eof(self) -> None:
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise trio.ClosedResourceError("this end is closed")
        self._shut()

    def _shut(self) -> None:
        if not self._eof_sent and not self.outgoing.broken:
            self._eof_sent = True
            self._enqueue(None)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if max_bytes is not None and operator.index(max_bytes) < 1:  # index: a float is a TypeError
            raise ValueError("max_bytes must be at least 1")
        if self._receiving:
            raise trio.BusyResourceError("another task is receiving on this stream")
        self._receiving = True
        try:
            await trio.lowlevel.checkpoint()  # before taking anything: a cancel here loses no bytes
            d = self.incoming
            while True:
                if self.closed:
                    raise trio.ClosedResourceError("this end is closed")
                if d.broken:
                    raise trio.BrokenResourceError("connection reset")
                held = d.settle(self._network)
                if d.delivered:
                    size = len(d.delivered) if max_bytes is None else max_bytes
                    taken = bytes(d.delivered[:size])
                    del d.delivered[:size]
                    return taken
                if d.eof:
                    return b""
                deadline = d.in_flight[0][0] if d.in_flight and not held else math.inf
                with trio.move_on_at(deadline):
                    await d.changed.wait()
        finally:
            self._receiving = False

    async def aclose(self) -> None:
        if not self.closed:
            self._shut()  # the peer reads EOF after what is already in flight
            self.closed = True
            self.incoming.notify()  # a receive of this end waiting now raises ClosedResourceError
            if self.peer.closed:
                self._network._streams.pop(self.stream_id, None)
        await trio.lowlevel.checkpoint()
