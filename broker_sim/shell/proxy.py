"""A TCP proxy the fleet controls: how one controller of its own quorum reaches another (`--quorum`),
so that a partition needs no root: a proxy that drops traffic.

Rules:
- `serve` listens on 127.0.0.1, on a port of the kernel's choosing (`address` once started). Each
  connection accepted is given a connection to `upstream` and bytes are pumped both ways, as they
  come, until either side closes or fails; then both are closed. An upstream that cannot be
  reached closes the accepted connection (as a dead node would refuse it).
- `cut()` closes every connection it carries and black-holes new ones: they are accepted (the
  kernel completes the handshake of a listening socket anyway) and what they send is read and
  dropped, answered by nothing, as over a network that loses every packet. A peer then waits for
  its own timeouts, as across a real partition, rather than learning at once from a refused
  connection, which no partition ever tells.
- `heal()` closes the black-holed connections (what they sent is lost; their peers reconnect) and
  carries new connections again. Both are idempotent and take effect at once (synchronously).
- Counters (`carried`, `black_holed`) say what the proxy did, for tests and the report.
"""

from __future__ import annotations

import trio

Address = tuple[str, int]
CONNECT_TIMEOUT_S = 2.0
CHUNK = 65536


class Proxy:
    def __init__(self, upstream: Address, name: str = "") -> None:
        self.upstream = upstream
        self.name = name or f"proxy to {upstream[0]}:{upstream[1]}"
        self.address: Address = ("127.0.0.1", 0)
        self.is_cut = False
        self.carried = 0  # connections pumped to the upstream
        self.black_holed = 0  # connections accepted while cut
        self._pumps: set[trio.CancelScope] = set()
        self._holes: set[trio.CancelScope] = set()

    async def serve(self, *, task_status: trio.TaskStatus[Address] = trio.TASK_STATUS_IGNORED) -> None:
        """Accept and carry connections until cancelled; `task_status.started(address)`."""
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        host, port = listeners[0].socket.getsockname()[:2]
        self.address = (host, port)
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._handle, listeners)
            task_status.started(self.address)

    def cut(self) -> None:
        self.is_cut = True
        for scope in list(self._pumps):
            scope.cancel()

    def heal(self) -> None:
        self.is_cut = False
        for scope in list(self._holes):
            scope.cancel()

    async def _handle(self, accepted: trio.SocketStream) -> None:
        async with accepted:
            if self.is_cut:
                await self._black_hole(accepted)
                return
            try:
                with trio.fail_after(CONNECT_TIMEOUT_S):
                    upstream = await trio.open_tcp_stream(*self.upstream)
            except (OSError, trio.TooSlowError):
                return
            async with upstream:
                await self._pump(accepted, upstream)

    async def _black_hole(self, accepted: trio.SocketStream) -> None:
        self.black_holed += 1
        with trio.CancelScope() as scope:
            self._holes.add(scope)
            try:
                while await accepted.receive_some(CHUNK):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            finally:
                self._holes.discard(scope)
        await trio.aclose_forcefully(accepted)

    async def _pump(self, accepted: trio.SocketStream, upstream: trio.SocketStream) -> None:
        self.carried += 1
        with trio.CancelScope() as scope:
            self._pumps.add(scope)
            try:
                if self.is_cut:  # cut while the upstream connection was being opened
                    return
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(_one_way, accepted, upstream, nursery.cancel_scope)
                    nursery.start_soon(_one_way, upstream, accepted, nursery.cancel_scope)
            finally:
                self._pumps.discard(scope)
        await trio.aclose_forcefully(accepted)
        await trio.aclose_forcefully(upstream)


async def _one_way(source: trio.SocketStream, sink: trio.SocketStream, both: trio.CancelScope) -> None:
    """Copy `source` to `sink` until `source` ends or either fails; then end both directions."""
    try:
        while data := await source.receive_some(CHUNK):
            await sink.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    finally:
        both.cancel()
