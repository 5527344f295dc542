"""The requests a node has in flight, one per destination (Kafka's `RequestManager`).

Rules:
- A destination is ready when nothing is in flight to it and it is not backing off. A request
  is in flight until answered, failed, or `request_timeout_ms` after it was sent (then the
  destination is ready again and a late answer is no longer expected).
- An answer that was handled well makes the destination ready at once; a failure (an error
  answer the node cannot use, `RequestFailed`) makes it back off `retry_backoff_ms` (Kafka's
  `quorum.retry.backoff.ms`).
- `reset_all` forgets every request (Kafka's `resetConnections`, on most transitions): the
  answers to requests sent in an earlier state are then ignored.
- Correlation ids come from one counter per node, so that an answer names one request only.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ids import NodeId


@dataclass(frozen=True, slots=True)
class Connection:
    correlation_id: int | None  # None: backing off since `since_ms`
    since_ms: int


class InFlight:
    def __init__(self, retry_backoff_ms: int, request_timeout_ms: int) -> None:
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self._connections: dict[NodeId, Connection] = {}
        self._next_correlation_id = 0

    def _expired(self, connection: Connection, now_ms: int) -> bool:
        wait = self.retry_backoff_ms if connection.correlation_id is None else self.request_timeout_ms
        return now_ms >= connection.since_ms + wait

    def is_ready(self, destination: NodeId, now_ms: int) -> bool:
        connection = self._connections.get(destination)
        if connection is None:
            return True
        if self._expired(connection, now_ms):
            del self._connections[destination]
            return True
        return False

    def any_in_flight(self, now_ms: int) -> bool:
        return any(
            connection.correlation_id is not None and not self._expired(connection, now_ms)
            for connection in self._connections.values()
        )

    def sent(self, destination: NodeId, now_ms: int) -> int:
        """Record a request sent now; its correlation id."""
        correlation_id = self._next_correlation_id
        self._next_correlation_id += 1
        self._connections[destination] = Connection(correlation_id, now_ms)
        return correlation_id

    def expects(self, source: NodeId, correlation_id: int) -> bool:
        connection = self._connections.get(source)
        return connection is not None and connection.correlation_id == correlation_id

    def answered(self, source: NodeId, correlation_id: int, success: bool, now_ms: int) -> None:
        if not self.expects(source, correlation_id):
            return
        if success:
            del self._connections[source]
        else:
            self._connections[source] = Connection(None, now_ms)

    def copy(self) -> InFlight:
        copied = InFlight(self.retry_backoff_ms, self.request_timeout_ms)
        copied._connections = dict(self._connections)
        copied._next_correlation_id = self._next_correlation_id
        return copied

    def reset_all(self) -> None:
        self._connections.clear()

    def next_change_ms(self, now_ms: int) -> int | None:
        """When a destination becomes ready again (a timeout or a backoff ends), if ever; the
        destinations already ready are forgotten."""
        for destination in [d for d, c in self._connections.items() if self._expired(c, now_ms)]:
            del self._connections[destination]
        times = [
            connection.since_ms
            + (self.retry_backoff_ms if connection.correlation_id is None else self.request_timeout_ms)
            for connection in self._connections.values()
        ]
        return min(times, default=None)
