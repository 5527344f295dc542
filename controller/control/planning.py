"""Which of a broker's queued control orders go out next, and as which requests.

Rules:
- A batch is the first orders of the broker's queue: at least one, then as many as fit both
  `max_in_flight` orders and `max_in_flight_bytes` of requests (with several requests in
  flight, their answers must fit the socket buffers while the channel still sends).
- Each order is sent at the highest version both sides support (`requests.common_version`); an
  order the broker supports no version of, or one that cannot be encoded, is logged, counted
  (UNSUPPORTED_VERSION, UNKNOWN_SERVER_ERROR) and dropped: it becomes no request.
- A large order (a new big topic) becomes several requests, built one at a time with the event
  loop running in between; only a large full LeaderAndIsr, which must stay one request, is built
  in a worker thread (from the order and the leaders' addresses taken on the loop).
"""

from __future__ import annotations

import functools
import itertools

import trio

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import EncodeError
from protocol.registry import api
from protocol.versions import Versions

from ..runtime import in_thread
from .links import (
    LARGE_ORDER_PARTITIONS,
    SMALL_ORDER_PARTITIONS,
    BrokerAddress,
    BrokerConnection,
    Link,
    OutboundRequest,
    encode_order,
    order_pieces,
)
from .orders import ControlOrder
from .outcomes import Outcomes, log
from .requests import common_version


class OrderPlanner:
    """The requests of a broker's next batch of orders (see the module's rules)."""

    def __init__(
        self, broker_address: BrokerAddress, outcomes: Outcomes, max_in_flight: int, max_in_flight_bytes: int
    ) -> None:
        self._broker_address = broker_address
        self._outcomes = outcomes
        self._max_in_flight = max_in_flight
        self._max_in_flight_bytes = max_in_flight_bytes

    async def plan(
        self, link: Link, conn: BrokerConnection, versions: dict[int, Versions]
    ) -> list[tuple[ControlOrder, list[OutboundRequest]]]:
        """The first orders of the queue and their requests: at least one order, then within the limits."""
        plans: list[tuple[ControlOrder, list[OutboundRequest]]] = []
        budget = self._max_in_flight_bytes
        for order in list(itertools.islice(link.queue, self._max_in_flight)):
            requests = await self._requests_for(link, conn, order, versions)
            size = sum(len(request.frame) for request in requests)
            if plans and size > budget:
                break
            plans.append((order, requests))
            budget -= size
        return plans

    async def _requests_for(
        self, link: Link, conn: BrokerConnection, order: ControlOrder, versions: dict[int, Versions]
    ) -> list[OutboundRequest]:
        """The order's requests at the best common version; [] (logged, counted) if it cannot be sent.

        A large order (a new big topic) becomes several requests, built one at a time with the
        event loop running in between; only a large full LeaderAndIsr, which must stay one
        request, is built in a worker thread (from the order and addresses taken here)."""
        api_key = ApiKey.STOP_REPLICA if order.stops else ApiKey.LEADER_AND_ISR
        version = common_version(api(api_key).versions, versions.get(api_key))
        if version is None:
            log.error("broker %d supports no version of api key %d: dropping an order", link.broker_id, api_key)
            self._outcomes.count(link.broker_id, api_key, -1, ErrorCode.UNSUPPORTED_VERSION)
            return []
        live = {} if api_key == ApiKey.STOP_REPLICA else self._live_leaders(order)
        requests: list[OutboundRequest] = []
        try:
            for piece in order_pieces(order):
                build = functools.partial(encode_order, conn, piece, api_key, version, live)
                size = len(piece.partitions) + len(piece.stops)
                if size > LARGE_ORDER_PARTITIONS:  # a full LeaderAndIsr: whole, off the loop
                    requests.extend(await in_thread(build))
                else:
                    requests.extend(build())
                    if size > SMALL_ORDER_PARTITIONS:  # a few ms of work: let other tasks run
                        await trio.sleep(0)
        except (EncodeError, ValueError):
            log.exception("broker %d: cannot encode an order at v%d of api key %d", link.broker_id, version, api_key)
            self._outcomes.count(link.broker_id, api_key, version, ErrorCode.UNKNOWN_SERVER_ERROR)
            return []
        return requests

    def _live_leaders(self, order: ControlOrder) -> dict[int, tuple[str, int]]:
        out: dict[int, tuple[str, int]] = {}
        for leader in {state.leader for state in order.partitions if state.leader >= 0}:
            address = self._broker_address(leader)
            if address is not None:
                out[leader] = (address[0], address[1])
        return out
