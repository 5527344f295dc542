"""One TCP connection to a Kafka port: its two streams, requests paired with responses, what it yields.

Purpose: `Connection` receives whole frames from its two `Side`s (streams.py) and appends what
they make to its reader's output, in the order the file completes them.

Rules:
- Pairing: responses match pending requests by correlation id; requests pending before the
  matched one (Kafka answers in order: they will never be answered, e.g. Produce with acks=0)
  are emitted unanswered then, as are all pending at the connection's end. At most
  `MAX_PENDING` requests and `MAX_PENDING_BYTES` of their frames wait per connection; the oldest
  is emitted unanswered beyond. A response that matches nothing is counted (kind "kafka", api key
  None). Times are those of the packets that completed each frame.
- At its end a connection gives up its streams' holes, emits its unanswered requests, then its
  counts: one `Other` for a "tls" or "not-kafka" connection (or one that carried bytes but no
  frame), then one per kind, API and version counted.
"""

from __future__ import annotations

from collections import Counter, deque
from typing import TYPE_CHECKING

from protocol.capture import INBOUND

from .items import KIND_KAFKA, KIND_NOT_KAFKA, KIND_TLS, Other, PcapExchange, Problem
from .streams import Side

if TYPE_CHECKING:
    from .reader import PcapReader

#: Requests waiting for their response per connection, and the bytes of their frames.
MAX_PENDING = 1024
MAX_PENDING_BYTES = 64 * 1024 * 1024


class Pending:
    __slots__ = ("api_key", "api_version", "correlation_id", "request", "size", "time_ns")

    def __init__(
        self, api_key: int, api_version: int, correlation_id: int, request: bytes | None, size: int, time_ns: int
    ) -> None:
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id
        self.request = request  # None for an API that is not decoded
        self.size = size
        self.time_ns = time_ns


class Connection:
    __slots__ = (
        "client",
        "first_ns",
        "frames",
        "id",
        "last_ns",
        "not_kafka",
        "others",
        "peer",
        "pending",
        "pending_bytes",
        "pending_ids",
        "reader",
        "server",
        "server_side",
        "tls",
    )

    def __init__(self, reader: PcapReader, number: int, peer: str, server: str, now: int) -> None:
        self.reader = reader
        self.id = number
        self.peer = peer
        self.server = server
        self.client = Side(self, "client")
        self.server_side = Side(self, "server")
        self.pending: deque[Pending] = deque()
        self.pending_ids: Counter[int] = Counter()
        self.pending_bytes = 0
        self.others: dict[tuple[str, int | None, int | None], list[int]] = {}
        self.frames = 0
        self.tls = False
        self.not_kafka = False
        self.first_ns = self.last_ns = now

    def problem(self, now: int, reason: str, missing: int | None = None) -> None:
        self.reader.out.append(Problem(now, self.id, self.peer, self.server, reason, missing))

    def count(
        self,
        kind: str,
        key: int | None,
        version: int | None,
        requests: int,
        responses: int,
        request_bytes: int,
        response_bytes: int,
        now: int,
    ) -> None:
        self.frames += 1
        found = self.others.get((kind, key, version))
        if found is None:
            self.others[(kind, key, version)] = [requests, responses, request_bytes, response_bytes, now, now]
        else:
            found[0] += requests
            found[1] += responses
            found[2] += request_bytes
            found[3] += response_bytes
            found[5] = now

    def request(self, key: int, version: int, correlation: int, payload: bytes | None, size: int, now: int) -> None:
        if payload is None:
            self.count(KIND_KAFKA, key, version, 1, 0, size, 0, now)
        else:
            self.frames += 1
            self.pending_bytes += size
        self.pending.append(Pending(key, version, correlation, payload, size, now))
        self.pending_ids[correlation] += 1
        while len(self.pending) > MAX_PENDING or self.pending_bytes > MAX_PENDING_BYTES:
            self.reader.stats["pending-evicted"] += 1
            self._unanswered(self._pop())

    def find_pending(self, correlation: int) -> Pending | None:
        if correlation not in self.pending_ids:
            return None
        for entry in self.pending:
            if entry.correlation_id == correlation:
                return entry
        raise AssertionError("pending_ids and pending disagree")

    def respond(self, entry: Pending, payload: bytes | None, size: int, now: int) -> None:
        """`entry`'s response: the requests pending before it will never be answered."""
        while True:
            first = self._pop()
            if first is entry:
                break
            self._unanswered(first)
        if entry.request is None:
            self.count(KIND_KAFKA, entry.api_key, entry.api_version, 0, 1, 0, size, now)
        else:
            self.frames += 1
            self.reader.out.append(self._exchange(entry, now, payload))

    def _pop(self) -> Pending:
        entry = self.pending.popleft()
        self.pending_ids[entry.correlation_id] -= 1
        if not self.pending_ids[entry.correlation_id]:
            del self.pending_ids[entry.correlation_id]
        if entry.request is not None:
            self.pending_bytes -= entry.size
        return entry

    def _unanswered(self, entry: Pending) -> None:
        if entry.request is not None:
            self.reader.out.append(self._exchange(entry, None, None))

    def _exchange(self, entry: Pending, response_ns: int | None, response: bytes | None) -> PcapExchange:
        assert entry.request is not None
        return PcapExchange(
            entry.time_ns,
            response_ns,
            INBOUND,
            self.id,
            self.peer,
            entry.api_key,
            entry.api_version,
            entry.correlation_id,
            entry.request,
            response,
            self.server,
        )

    def close(self, now: int, cause: str) -> None:
        """The connection ends: its holes, its unanswered requests, its counts."""
        self.client.finish(now, cause)
        self.server_side.finish(now, cause)
        while self.pending:
            self._unanswered(self._pop())
        out = self.reader.out
        client_bytes, server_bytes = self.client.delivered, self.server_side.delivered
        if self.tls:
            out.append(
                Other(
                    KIND_TLS,
                    self.id,
                    self.peer,
                    self.server,
                    None,
                    None,
                    0,
                    0,
                    client_bytes,
                    server_bytes,
                    self.first_ns,
                    self.last_ns,
                )
            )
        elif self.not_kafka or (not self.frames and (client_bytes or server_bytes)):
            out.append(
                Other(
                    KIND_NOT_KAFKA,
                    self.id,
                    self.peer,
                    self.server,
                    None,
                    None,
                    0,
                    0,
                    client_bytes,
                    server_bytes,
                    self.first_ns,
                    self.last_ns,
                )
            )
        for (kind, key, version), (requests, responses, sent, received, first, last) in sorted(
            self.others.items(), key=lambda item: (item[0][0], item[0][1] is None, item[0][1] or 0, item[0][2] or 0)
        ):
            out.append(
                Other(
                    kind,
                    self.id,
                    self.peer,
                    self.server,
                    key,
                    version,
                    requests,
                    responses,
                    sent,
                    received,
                    first,
                    last,
                )
            )
        self.others.clear()
