"""Raft RPCs from the daemon's connections: queued for the quorum's task, checked, handed to the
Raft core, and answered on their connection.

Rules:
- Requests come from the daemon's connections (`submit`), one at a time, in arrival order: one
  that finds nothing ahead of it (an empty queue, no large request being answered) is handled
  at once, on the submitting connection's task (handling is synchronous: it gives the core an
  event and returns); otherwise it waits in a bounded queue for the quorum's own task (`serve`).
  A full queue (`INBOUND_QUEUE_LIMIT` requests) makes the submitting connection wait, reading
  nothing meanwhile (`wait_for_room`); the queue's length is a metric. Vote, BeginQuorumEpoch,
  EndQuorumEpoch, Fetch and FetchSnapshot go to the core (`wire_requests` maps them; a request
  about another partition is answered INVALID_REQUEST at once); its answer comes back as an
  action (`respond`) and is sent on the request's connection, a Fetch's with the log's record
  bytes from the offset the core names (at most `FETCH_MAX_BYTES`, Kafka's 8 MiB, and only
  what is on disk: records the writer is still writing go with a later fetch), a
  FetchSnapshot's with the snapshot's bytes from the position asked (POSITION_OUT_OF_RANGE past
  its end). DescribeQuorum is answered from the core's state (`describe_quorum`); over a
  megabyte, its per-partition refusals are built in a worker thread.
- With an authorizer, each request needs the API's cluster operation (CLUSTER_ACTION, DESCRIBE
  for DescribeQuorum), as Kafka's ControllerApis checks; a refusal goes to `Denials`.
- A voter is who it proves to be (`controller.auth.voters`): when the listener authenticates its
  clients, a request naming another voter as its sender (a Fetch's or FetchSnapshot's replica
  id, a Vote's candidate, a BeginQuorumEpoch's or EndQuorumEpoch's leader) on a connection
  whose principal is not that voter's is answered CLUSTER_AUTHORIZATION_FAILED before the core
  sees it, counted as an authorization denial and logged (sparsely), whatever the authorizer says.
- No request can stop the node: the core refuses what it cannot accept (`controller.raft.inbound`),
  and an error in the handling of one request anyway is logged with the request's summary,
  counted (`fencer_request_failures_total{stage="raft"}`) and answered UNKNOWN_SERVER_ERROR, the
  core left as it was before the request. Only the node's own disk failing stops it (a
  `LogError`).
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import trio

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode, response_error_code
from protocol.registry import api, encode_response
from protocol.spec import Data

from ..auth.voters import VoterIdentities
from ..core import denied_answer
from ..engine import ControllerEngine
from ..log import LogError, SnapshotId
from ..log.model import OffsetOutOfRangeError, PositionOutOfRangeError, SnapshotNotFoundError
from ..ops.authorization import authorize_api
from ..raft import Event, NodeId, RaftNode, RequestReceived, wire, wire_requests, wire_responses
from ..raft import messages as rm
from ..raft.describe_quorum import describe_quorum
from ..runtime import in_thread
from .denials import Denials
from .logging_config import RateLimitedLogger
from .peer_link import FETCH_MAX_BYTES
from .pending import LARGE_FRAME_BYTES, Pending, request_context
from .quorum_config import QuorumConfig

log = logging.getLogger("fencer.quorum")
#: Raft requests waiting for the quorum's task; past it, connections wait to hand theirs on
INBOUND_QUEUE_LIMIT = 256
QUORUM_API_KEYS = wire.RAFT_API_KEYS | {ApiKey.DESCRIBE_QUORUM}


class InboundMetrics(Protocol):
    def request_failed(self, stage: str) -> None: ...
    def authorization_denied(self, api: str, principal: str) -> None: ...


@dataclass
class _Inbound:
    pending: Pending
    api_key: int
    version: int
    body: Any


class RaftInbound:
    def __init__(
        self,
        node: RaftNode,
        config: QuorumConfig,
        engine: ControllerEngine,
        handle: Callable[[Event], None],
        *,
        clock_ms: Callable[[], int],
        wall_ms: Callable[[], int],
        identities: VoterIdentities | None,
        metrics: InboundMetrics,
        denials: Denials,
    ) -> None:
        """`handle` gives the core an event (and queues the actions it answers with)."""
        self._node = node
        self._config = config
        self._engine = engine
        self._handle = handle
        self._clock_ms = clock_ms
        self._wall_ms = wall_ms
        #: who may speak for which voter, when the listener authenticates its clients
        self._identities = identities
        self._metrics = metrics
        self._denials = denials
        self._identity_log = RateLimitedLogger(log)  # refused voter claims, logged sparsely
        #: requests the core holds (it answers with `respond`), by the correlation id it knows
        self._inbound: dict[int, _Inbound] = {}
        self._ids = itertools.count(1)
        #: requests handed on by connections, waiting for the quorum's task (`serve`)
        self._queue: deque[Pending] = deque()
        self._queue_ready = trio.Event()
        self._room = trio.Event()
        self._busy = False  # the quorum's task is answering a large request (it awaits a thread)

    @property
    def queued(self) -> int:
        """Requests waiting for the quorum's task (a metric)."""
        return len(self._queue)

    def submit(self, pending: Pending) -> bool:
        """A quorum RPC from a connection (the daemon routes `QUORUM_API_KEYS` here), queued for the
        quorum's task; False when the queue is full (the connection waits with `wait_for_room`)."""
        if len(self._queue) >= INBOUND_QUEUE_LIMIT:
            return False
        if not self._queue and not self._busy and len(pending.payload) <= LARGE_FRAME_BYTES:
            self._handle_one(pending)  # nothing ahead of it: handled now, not a scheduling round later
            return True
        self._queue.append(pending)
        self._queue_ready.set()
        return True

    async def wait_for_room(self) -> None:
        while len(self._queue) >= INBOUND_QUEUE_LIMIT:
            self._room = trio.Event()
            await self._room.wait()

    async def serve(self) -> None:
        """The quorum's task: one request at a time, in arrival order."""
        while True:
            while not self._queue:
                self._queue_ready = trio.Event()
                await self._queue_ready.wait()
            pending = self._queue.popleft()
            self._room.set()
            if len(pending.payload) > LARGE_FRAME_BYTES and not self._describes_this_partition(pending):
                self._busy = True
                try:
                    await self._answer_large(pending)
                except LogError:
                    raise
                except Exception as exc:  # a bug on one request: refuse it, serve the others
                    self._failed_request(pending, exc)
                finally:
                    self._busy = False
            else:
                self._handle_one(pending)
            await trio.lowlevel.checkpoint()

    def _handle_one(self, pending: Pending) -> None:
        try:
            self._receive(pending)
        except LogError:
            raise
        except Exception as exc:  # a bug on one request: refuse it, serve the others
            self._failed_request(pending, exc)

    def _describes_this_partition(self, pending: Pending) -> bool:
        request = pending.request
        assert request is not None
        topics: Any = getattr(request.body, "topics", ())
        return request.api_key == ApiKey.DESCRIBE_QUORUM and len(topics) == 1 and len(topics[0].partitions) == 1

    async def _answer_large(self, pending: Pending) -> None:
        """A request over a megabyte: whatever it names beyond `__cluster_metadata-0` makes it an
        error answer that depends on the request alone (refused by the authorizer or the wire
        mapping, or DescribeQuorum's per-partition UNKNOWN_TOPIC_OR_PARTITION), built and encoded
        in a worker thread, so that answering millions of entries never holds the event loop.
        One about the metadata partition alone (a large one is all padding) is answered as usual."""
        request = pending.request
        assert request is not None
        if request.api_key != ApiKey.DESCRIBE_QUORUM:
            self._receive(pending)  # the wire mapping refuses it at once (more than one partition)
            return
        authorizer = self._engine.authorizer
        if authorizer is not None and authorize_api(authorizer, request_context(pending), request.api_key) is not None:
            self._receive(pending)  # the denial lists nothing per partition
            return
        node, voters, now_ms, wall_ms = self._node, self._config.voters, self._clock_ms(), self._wall_ms()

        def build() -> tuple[bytes, int]:
            answer = describe_quorum(node, request.body, request.api_version, voters, now_ms, wall_ms)
            return encode_response(answer, request.api_version, request.correlation_id), response_error_code(answer)

        frame, code = await in_thread(build)
        pending.answer(frame, code)

    def _receive(self, pending: Pending) -> None:
        request = pending.request
        assert request is not None
        key, version, body = request.api_key, request.api_version, request.body
        authorizer = self._engine.authorizer
        if authorizer is not None:  # CLUSTER_ACTION (DESCRIBE for DescribeQuorum), as Kafka's ControllerApis
            context = request_context(pending)
            if authorize_api(authorizer, context, key) is not None:
                self._denials.denied(api(key).name, context, pending.peer)
                self._respond(pending, denied_answer(key, version, body, context))
                return
        if key == ApiKey.DESCRIBE_QUORUM:
            answer = describe_quorum(self._node, body, version, self._config.voters, self._clock_ms(), self._wall_ms())
            self._respond(pending, answer)
            return
        try:
            message = wire_requests.request_from_wire(key, version, body)
        except wire_requests.WireRefusal as refusal:
            self._respond(pending, refusal.response)
            return
        if not self._proven(pending, key, message):
            self._respond(pending, wire_responses.top_level_error(key, ErrorCode.CLUSTER_AUTHORIZATION_FAILED))
            return
        correlation = next(self._ids)
        self._inbound[correlation] = _Inbound(pending, key, version, body)
        self._handle(RequestReceived(_source(message), correlation, message))  # answered by an action

    def _proven(self, pending: Pending, key: int, message: rm.Request) -> bool:
        """Whether the connection may speak for the voter the request names (always, without
        client authentication); a refusal is counted as an authorization denial."""
        identities = self._identities
        if identities is None:
            return True
        claimed = _source(message)
        why = identities.refusal(claimed, pending.principal)
        if why is None:
            return True
        self._metrics.authorization_denied(api(key).name, pending.principal)
        self._identity_log.log(
            logging.WARNING,
            f"{key} {pending.principal} {claimed}",
            "%s naming voter %d from %s refused: %s (a voter is who its certificate proves)",
            api(key).name,
            claimed,
            pending.peer,
            why,
        )
        return False

    def _failed_request(self, pending: Pending, exc: Exception) -> None:
        request = pending.request
        assert request is not None
        log.error(
            "quorum: %s v%d from %s failed (%s); answered UNKNOWN_SERVER_ERROR: %s",
            api(request.api_key).name,
            request.api_version,
            pending.peer,
            _summary(request.body),
            exc,
            exc_info=exc,
        )
        self._metrics.request_failed("raft")
        for correlation, inbound in list(self._inbound.items()):
            if inbound.pending is pending:
                del self._inbound[correlation]
        if not pending.resolved:
            self._respond(pending, wire_responses.top_level_error(request.api_key, ErrorCode.UNKNOWN_SERVER_ERROR))

    def respond_now(self, correlation_id: int, response: rm.Response) -> bool:
        """`respond` if that needs no waiting (no record or snapshot bytes to read from disk):
        whether it was done."""
        inbound = self._inbound.get(correlation_id)
        if inbound is None:
            return True  # gone: nothing to answer
        records: bytes | None = None
        if isinstance(response, rm.FetchSnapshotResponse) and response.snapshot_id is not None:
            return False
        if isinstance(response, rm.FetchResponse) and response.records_from_offset is not None:
            try:
                read = self._engine.log.read_recent_records(response.records_from_offset, _fetch_limit(inbound.body))
            except (LogError, ValueError):
                return False  # the disk path says what is wrong
            if read is None:
                return False
            records = read.records
        del self._inbound[correlation_id]
        self._respond(inbound.pending, wire_responses.response_to_wire(response, records=records))
        return True

    async def respond(self, correlation_id: int, response: rm.Response) -> None:
        """The core's answer to the request it knows by `correlation_id` (`SendResponse`): sent on
        the request's connection, a Fetch's with the log's records, a FetchSnapshot's with the
        snapshot's bytes. Nothing when the request is gone (it failed meanwhile)."""
        if self.respond_now(correlation_id, response):
            return
        inbound = self._inbound.pop(correlation_id)  # respond_now answers a request that is gone
        await self._answer(inbound, response)

    async def _answer(self, inbound: _Inbound, response: rm.Response) -> None:
        records: bytes | None = None
        chunk: tuple[int, int, bytes] | None = None
        if isinstance(response, rm.FetchResponse) and response.records_from_offset is not None:
            limit, offset, log_ = _fetch_limit(inbound.body), response.records_from_offset, self._engine.log
            try:
                read = await in_thread(log_.read_records, offset, limit)
                records = read.records
            except (LogError, ValueError, OffsetOutOfRangeError) as exc:
                # retention, a truncation, or records the writer has not written yet: the next
                # fetch starts over (the core's log end passes the disk's while a batch is written)
                log.debug("no records for a fetch from %d: %s", response.records_from_offset, exc)
        elif isinstance(response, rm.FetchSnapshotResponse) and response.snapshot_id is not None and not response.error:
            position, max_bytes = wire_requests.snapshot_position(inbound.body)
            snapshot = SnapshotId(response.snapshot_id.offset, response.snapshot_id.epoch)
            try:
                read_chunk = await in_thread(
                    self._engine.log.read_snapshot_chunk, snapshot, position, max(1, min(max_bytes, FETCH_MAX_BYTES))
                )
                chunk = (read_chunk.size, position, read_chunk.data)
            except (LogError, ValueError, SnapshotNotFoundError, PositionOutOfRangeError) as exc:
                log.info("snapshot %s at %d unavailable: %s", snapshot, position, exc)
                error = (
                    ErrorCode.POSITION_OUT_OF_RANGE
                    if isinstance(exc, PositionOutOfRangeError)
                    else ErrorCode.SNAPSHOT_NOT_FOUND
                )
                response = rm.FetchSnapshotResponse(error, response.leader_id, response.leader_epoch)
        self._respond(inbound.pending, wire_responses.response_to_wire(response, records=records, snapshot_chunk=chunk))

    def _respond(self, pending: Pending, response: Data) -> None:
        request = pending.request
        assert request is not None
        try:
            frame = encode_response(response, request.api_version, request.correlation_id)
        except Exception:
            log.exception("cannot encode the answer to api key %d from %s", request.api_key, pending.peer)
            self._metrics.request_failed("encode")
            pending.close_unanswered()
            return
        pending.answer(frame, response_error_code(response))  # the request's connection sends it


def _fetch_limit(body: Any) -> int:
    """The bytes a Fetch answer may carry: the request's limits, at most `FETCH_MAX_BYTES`."""
    partition_max, request_max = wire_requests.fetch_limits(body)
    return max(1, min(partition_max, request_max, FETCH_MAX_BYTES))


def _summary(body: object, limit: int = 300) -> str:
    text = repr(body)
    return text if len(text) <= limit else text[:limit] + "..."


def _source(message: rm.Request) -> NodeId:
    """Who sent a request (the core answers by node id; the wire answer goes on its connection)."""
    if isinstance(message, rm.VoteRequest):
        return message.candidate_id
    if isinstance(message, rm.BeginQuorumEpochRequest | rm.EndQuorumEpochRequest):
        return message.leader_id
    return message.replica_id
