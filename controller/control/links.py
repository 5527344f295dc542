"""The pieces of the outbound control channel (`controller.control.channel`): constants, the per-broker
queue (`Link`) and connection (`BrokerConnection`), and an order cut into request frames.

Rules: a LeaderAndIsr order queued behind the in-flight window merges into the LeaderAndIsr just
before it (`mergeable`, `Link.merge_into_tail`: the later state of a partition wins), so that a slow or
unreachable broker's queue stays bounded.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from protocol.api_keys import ApiKey
from protocol.capture import Exchange
from protocol.errors import ProtocolError
from protocol.framing import FrameBuffer
from protocol.registry import encode_request
from protocol.spec import Data

from .orders import BrokerTarget, ControlOrder
from .requests import leader_and_isr_request, stop_replica_requests

API_VERSIONS_VERSION = 3
CLIENT_SOFTWARE_NAME = "fencer"
CLIENT_SOFTWARE_VERSION = "0.1"
MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: seeds each channel's retry jitter (with its controller id): a channel's own sequence, the same
#: in every run, so that a simulation of several controllers in one process replays exactly
JITTER_SEED = 0x5EED
OUTBOUND_CONNECTION_IDS = 1 << 40

#: broker id -> where its control requests go (host, port, current broker epoch, security protocol),
#: or None when unregistered or fenced
BrokerAddress = Callable[[int], BrokerTarget | None]
#: How long closing a connection may wait to say goodbye (a TLS close_notify) before it just closes.
CLOSE_TIMEOUT_S = 1.0


class CaptureSink(Protocol):
    def add(self, exchange: Exchange) -> None: ...


class PeerError(Exception):
    """The broker closed the connection or answered something unusable."""


CONNECTION_ERRORS = (
    OSError,
    trio.BrokenResourceError,
    trio.ClosedResourceError,
    trio.TooSlowError,
    ProtocolError,
    PeerError,
)


def mergeable(earlier: ControlOrder, later: ControlOrder) -> bool:
    return (
        not earlier.stops
        and not later.stops
        and earlier.broker_epoch == later.broker_epoch
        and earlier.controller_epoch == later.controller_epoch
    )


@dataclass
class Link:
    broker_id: int
    queue: deque[ControlOrder] = field(default_factory=deque)
    wakeup: trio.Event | None = None
    running: bool = False
    failures: int = 0  # consecutive, for the backoff
    #: the broker epoch whose listener the channel cannot speak to, once logged and counted
    unspeakable_epoch: int | None = None
    #: the partitions of `merged_tail` by (topic id, partition), kept while later orders merge into it
    tail_states: dict[tuple[Any, int], Any] = field(default_factory=dict)
    merged_tail: ControlOrder | None = None

    def merge_into_tail(self, later: ControlOrder) -> None:
        """Replace the last queued order by it merged with `later` (the later state of a partition wins).

        Merging one order after another into the same tail costs the size of each, not of the tail."""
        earlier = self.queue[-1]
        states = self.tail_states
        if self.merged_tail is not earlier:
            states.clear()
            for state in earlier.partitions:
                states[(state.topic_id, state.partition)] = state
        for state in later.partitions:
            states[(state.topic_id, state.partition)] = state
        merged = dataclasses.replace(later, partitions=tuple(states.values()), full=earlier.full or later.full)
        self.queue[-1] = self.merged_tail = merged


@dataclass
class OutboundRequest:
    api_key: int
    version: int
    correlation_id: int
    frame: bytes
    sent_ns: int = 0


class BrokerConnection:
    def __init__(self, stream: trio.abc.Stream, peer: str, connection_id: int) -> None:
        self.stream = stream
        self.peer = peer
        self.connection_id = connection_id
        self.frames = FrameBuffer(MAX_RESPONSE_BYTES)
        self._correlation = itertools.count(1)

    def request(self, body: Data, version: int) -> OutboundRequest:
        correlation_id = next(self._correlation)
        frame = encode_request(body, version, correlation_id, client_id=CLIENT_SOFTWARE_NAME)
        return OutboundRequest(body.API.key, version, correlation_id, frame)

    async def receive_frame(self) -> bytes:
        while (payload := self.frames.next_frame()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                raise PeerError("connection closed by the broker")
            self.frames.receive_data(data)
        return payload


# ---------------------------------------------------------------------- orders into requests
#: An order becomes requests of at most this many partitions (a few ms to build and encode here,
#: and to digest the answer), each built on the event loop with other tasks running between
#: them. A full LeaderAndIsr must stay one request (the broker drops what it does not name): a
#: larger one is built in a worker thread.
LARGE_ORDER_PARTITIONS = 500
#: After building a request of more partitions than this, the channel lets other tasks run.
SMALL_ORDER_PARTITIONS = 100
#: Larger answers are decoded in a worker thread.
LARGE_PAYLOAD_BYTES = 1 << 20


def order_pieces(order: ControlOrder) -> list[ControlOrder]:
    """The order cut into orders of at most `LARGE_ORDER_PARTITIONS` partitions or stops, in
    order (a full LeaderAndIsr is never cut)."""
    if order.full or len(order.partitions) + len(order.stops) <= LARGE_ORDER_PARTITIONS:
        return [order]
    size = LARGE_ORDER_PARTITIONS
    if order.stops:
        return [dataclasses.replace(order, stops=order.stops[i : i + size]) for i in range(0, len(order.stops), size)]
    return [
        dataclasses.replace(order, partitions=order.partitions[i : i + size])
        for i in range(0, len(order.partitions), size)
    ]


def encode_order(
    conn: BrokerConnection, order: ControlOrder, api_key: int, version: int, live: dict[int, tuple[str, int]]
) -> list[OutboundRequest]:
    """The request frames of one order piece (may run in a worker thread: reads only its arguments)."""
    bodies: list[Data] = (
        list(stop_replica_requests(order, version))
        if api_key == ApiKey.STOP_REPLICA
        else [leader_and_isr_request(order, version, live)]
    )
    return [conn.request(body, version) for body in bodies]
