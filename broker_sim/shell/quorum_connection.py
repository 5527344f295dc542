"""A connection the fleet keeps to one node of its own quorum (`Probe`): DescribeQuorum, or any
other request of the fleet's own, one at a time, each answered within `PROBE_S` or the connection
closed (and opened again at the next request).
"""

from __future__ import annotations

import ssl

import trio

from broker_sim.model.quorum import DESCRIBE_QUORUM_VERSION, LeaderView, describe_quorum_request, leader_view
from protocol.errors import DecodeError
from protocol.framing import FrameBuffer
from protocol.messages.describe_quorum import DescribeQuorumResponse
from protocol.registry import decode_response, encode_request
from protocol.spec import Data

from .proxy import Address
from .tls import open_stream

PROBE_S = 0.5


class Probe:
    """DescribeQuorum (or another request of the fleet's own) to one node on a connection kept open
    (see the module rules)."""

    def __init__(self, address: Address, tls: ssl.SSLContext | None = None) -> None:
        self.address = address
        self.tls = tls
        self._stream: trio.abc.Stream | None = None
        self._frames = FrameBuffer()
        self._correlation = 0
        self._asking = trio.Lock()

    async def describe(self) -> tuple[bool, LeaderView | None]:
        """(whether the node answered, the leader's view if it answered as the leader)."""
        response = await self.ask(describe_quorum_request(), DESCRIBE_QUORUM_VERSION)
        if not isinstance(response, DescribeQuorumResponse):
            await self.close()
            return False, None
        return True, leader_view(response)

    async def ask(self, body: Data, version: int) -> object | None:
        """`body`'s answer within `PROBE_S`; None (and the connection closed) when none came."""
        try:
            with trio.fail_after(PROBE_S):
                async with self._asking:  # the poller and the prober share the connection: one at a time
                    response = await self._exchange(body, version)
        except (OSError, trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, DecodeError):
            await self.close()
            return None

        return response

    async def _exchange(self, body: Data, version: int) -> object:
        if self._stream is None:
            self._stream = await open_stream(*self.address, self.tls)
            self._frames = FrameBuffer()
        self._correlation += 1
        frame = encode_request(body, version, self._correlation, "fencer-fleet")
        stream = self._stream
        await stream.send_all(frame)
        while (payload := self._frames.next_frame()) is None:
            data = await stream.receive_some(65536)  # `close` may drop self._stream meanwhile
            if not data:
                raise trio.BrokenResourceError("the node closed the connection")
            self._frames.receive_data(data)
        return decode_response(payload, body.API.key, version)[1]

    async def close(self) -> None:
        stream, self._stream = self._stream, None
        if stream is not None:
            await trio.aclose_forcefully(stream)
