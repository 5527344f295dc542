"""The broker side of the control plane: a TCP listener serving ApiVersions, LeaderAndIsr and StopReplica.

Each simulated broker runs one; the controller's control channel connects to it. The listener
keeps what the broker believes about its partitions (`partitions`) and the newest controller
epoch it has seen, and enforces the broker-side rules of semantics.md ("StopReplica and
LeaderAndIsr"), as Kafka's ZooKeeper-era broker does:
- A broker epoch in the request older than the broker's current one -> STALE_BROKER_EPOCH (77),
  nothing done; -1 is never stale and a newer epoch is accepted (LeaderAndIsr v2+, StopReplica v1+).
- A controller epoch older than the newest seen -> STALE_CONTROLLER_EPOCH (11), nothing done;
  otherwise it becomes the newest seen. The broker epoch is checked first.
- StopReplica v3+, per partition: a leader epoch older than the broker's -> FENCED_LEADER_EPOCH (74);
  equal or newer is accepted, and -1 (no epoch) and -2 (topic being deleted) always are. Older
  versions carry no leader epoch. An accepted stop marks the partition stopped (and deleted when
  asked); a partition the broker does not know answers NONE.
- LeaderAndIsr, per partition: a leader epoch older than the broker's -> FENCED_LEADER_EPOCH (74);
  a partition whose replicas do not include this broker -> UNKNOWN_TOPIC_OR_PARTITION (3), as in
  Kafka. An equal leader epoch with an older partition epoch answers NONE and keeps the newer
  state (a replayed request must not roll the ISR back). A full request (v5+, type 2) marks
  the partitions it does not name deleted (Kafka deletes such stray partitions).
- Deleted partitions count as unknown: a re-created topic starts from its own epochs.
- Whole-request rejections: StopReplica answers the top-level error with no partitions;
  LeaderAndIsr answers it at the top level and for every partition (Kafka's `getErrorResponse`).
- ApiVersions v0-4 (v3+ checks the client software name and version: INVALID_REQUEST). An
  unsupported ApiVersions version gets a v0 body with UNSUPPORTED_VERSION (35) listing only key 18
  (KIP-511). Any other unknown API or unsupported version, or an undecodable frame, closes the
  connection without an answer (Kafka's behaviour). Pipelined requests are answered in order.
- What was accepted, for the fleet's journal (pure helpers): `decided_stops` (the partitions of a
  StopReplica not refused whole, each with its leader epoch, delete flag and answer) and `request_type`;
  and what identifies a request refused whole (`request_digest`: of its decoded body, every field:
  epochs, type, partitions) and the connection it came on (`serving_connection`, while
  `on_handled` runs: a number unique in the process), so that a checker can tell a request sent
  again on the same connection after its refusal.
- Hooks for the fleet: `on_handled(key, version, request, response)` after every decided request,
  `on_exchange(peer, payload, reply, received_ns)` after every frame (the capture; `received_ns`
  is when its bytes were in, before a gate's pause), `record_received=False`
  keeps no list of requests (a long run), and while `gate` holds an unset event the listener
  answers nothing (a paused broker) until it is set.
- TLS (`tls`, the fleet's listener context: `broker_sim.shell.tls`): the listener is TLS-only and
  the context requires a client certificate; a connection whose handshake fails (no certificate,
  one the CA did not issue, not TLS at all, or not done within `HANDSHAKE_TIMEOUT_S`) is closed
  having handled nothing, and counted (`tls_failures`). None: plain TCP, as before.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import re
import ssl
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import trio

from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.errors import DecodeError
from protocol.framing import FrameBuffer
from protocol.messages.api_versions import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    ApiVersionsResponseApiVersion,
    unsupported_version_answer,
)
from protocol.messages.leader_and_isr import (
    LeaderAndIsrRequest,
    LeaderAndIsrRequestPartitionState,
    LeaderAndIsrResponse,
    LeaderAndIsrResponsePartitionError,
    LeaderAndIsrResponseTopicError,
)
from protocol.messages.stop_replica import StopReplicaRequest, StopReplicaResponse, StopReplicaResponsePartitionError
from protocol.registry import api, decode_request, encode_response, peek_request
from protocol.spec import ZERO_UUID, Data
from protocol.versions import Versions

from ..model.views import PartitionView
from . import runtime
from .runtime import wall_ns

__all__ = [
    "BrokerControlListener",
    "PartitionView",
    "Stop",
    "decided_stops",
    "flatten_states",
    "request_digest",
    "request_type",
]

log = logging.getLogger("fencer.broker_sim.shell.listener")

SERVED_API_KEYS: frozenset[int] = frozenset({ApiKey.API_VERSIONS, ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA})
NO_EPOCH = -1
DELETE_EPOCH = -2
TYPE_FULL = 2
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_MAX_FRAME_BYTES = 16 * 1024 * 1024
HANDSHAKE_TIMEOUT_S = 10.0
_CONNECTION_NUMBERS = itertools.count(1)  # every connection served in the process, numbered once


@dataclass(frozen=True, slots=True)
class Stop:
    """One partition of a StopReplica: its leader epoch (-1 for v0-2, which carry none) and delete flag."""

    topic_name: str
    partition: int
    leader_epoch: int
    delete: bool


class BrokerControlListener:
    """Serves one simulated broker's control requests; see the module docstring for the rules."""

    def __init__(
        self,
        broker_id: int,
        broker_epoch: Callable[[], int],
        *,
        max_versions: Mapping[int, int] | None = None,
        record_received: bool = True,
        on_handled: Callable[[int, int, Data, Data], None] | None = None,
        on_exchange: Callable[[str, bytes, bytes | None, int], None] | None = None,
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.partitions: dict[tuple[str, int], PartitionView] = {}
        self.controller_epoch = 0
        self.received: list[tuple[int, int, object, object]] = []
        self.record_received = record_received
        self.on_handled = on_handled
        self.on_exchange = on_exchange
        self.gate: trio.Event | None = None
        #: close the connection instead of handling the next N control requests (a crash before acking)
        self.drop_next_requests = 0
        self.connections = 0
        #: the number of the connection whose request is being handled (0: none; see the module rules)
        self.serving_connection = 0
        self.tls = tls
        self.tls_failures = 0  # connections closed on a failed TLS handshake
        self._versions = {key: _limited(api(key).versions, (max_versions or {}).get(key)) for key in SERVED_API_KEYS}

    # ------------------------------------------------------------------ I/O
    async def serve(
        self, host: str = "127.0.0.1", port: int = 0, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Listen on (host, port) until cancelled; `task_status.started` gets the actual port."""
        tcp_listeners = await runtime.current().open_tcp_listeners(port, host)
        actual_port: int = tcp_listeners[0].socket.getsockname()[1]  # type: ignore[attr-defined]
        listeners: list[trio.abc.Listener[trio.abc.Stream]] = (
            list(tcp_listeners) if self.tls is None else [trio.SSLListener(tcp, self.tls) for tcp in tcp_listeners]
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(trio.serve_listeners, self._serve_connection, listeners)
            task_status.started(actual_port)

    async def _serve_connection(self, stream: trio.abc.Stream) -> None:
        self.connections += 1
        number = next(_CONNECTION_NUMBERS)
        frames = FrameBuffer(_MAX_FRAME_BYTES)
        peer = _peer(stream)
        if isinstance(stream, trio.SSLStream) and not await self._handshake(stream, peer):
            return
        try:
            async with stream:
                while data := await stream.receive_some(65536):
                    frames.receive_data(data)
                    while (payload := frames.next_frame()) is not None:
                        received_ns = wall_ns()
                        while (gate := self.gate) is not None:
                            await gate.wait()
                        self.serving_connection = number
                        try:
                            reply = self.handle_frame(payload)
                        finally:
                            self.serving_connection = 0
                        if self.on_exchange is not None:
                            self.on_exchange(peer, payload, reply, received_ns)
                        if reply is None:
                            return
                        await stream.send_all(reply)
        except (trio.BrokenResourceError, trio.ClosedResourceError, DecodeError) as exc:
            log.info("broker %d: connection closed: %s", self.broker_id, exc.__cause__ or exc)

    async def _handshake(self, stream: trio.SSLStream[trio.abc.Stream], peer: str) -> bool:
        """The TLS handshake, within `HANDSHAKE_TIMEOUT_S`; a failure is counted and closes the connection."""
        failure: BaseException | None = None
        with trio.move_on_after(HANDSHAKE_TIMEOUT_S):
            try:
                await stream.do_handshake()
                return True
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                failure = exc.__cause__ or exc
        self.tls_failures += 1
        log.info("broker %d: TLS handshake with %s failed: %s", self.broker_id, peer, failure or "timed out")
        await trio.aclose_forcefully(stream)
        return False

    # ------------------------------------------------------------------ frames
    def handle_frame(self, payload: bytes) -> bytes | None:
        """The response frame to one request payload, or None to close the connection."""
        try:
            key, version, correlation_id = peek_request(payload)
        except DecodeError:
            return None
        if key == ApiKey.API_VERSIONS and version not in self._versions[key]:
            if correlation_id is None:
                return None
            return encode_response(self._api_versions_fallback(), 0, correlation_id)
        if key not in SERVED_API_KEYS or version not in self._versions[key]:
            log.warning("broker %d: closing on api key %d version %d", self.broker_id, key, version)
            return None
        if key != ApiKey.API_VERSIONS and self.drop_next_requests > 0:
            self.drop_next_requests -= 1
            return None
        try:
            request = decode_request(payload, allowed=SERVED_API_KEYS)
        except DecodeError as exc:
            log.warning("broker %d: closing on an undecodable request: %s", self.broker_id, exc)
            return None
        response = self.handle(key, version, request.body)
        if self.record_received:
            self.received.append((key, version, request.body, response))
        if self.on_handled is not None:
            self.on_handled(key, version, request.body, response)
        return encode_response(response, version, request.correlation_id)

    def handle(self, api_key: int, version: int, request: Data) -> Data:
        """Decide one decoded request (no I/O)."""
        if isinstance(request, LeaderAndIsrRequest):
            return self._leader_and_isr(request, version)
        if isinstance(request, StopReplicaRequest):
            return self._stop_replica(request, version)
        if isinstance(request, ApiVersionsRequest):
            return self._api_versions(request, version)
        raise ValueError(f"api key {api_key} is not served here")

    # ------------------------------------------------------------------ ApiVersions
    def _api_versions(self, request: ApiVersionsRequest, version: int) -> ApiVersionsResponse:
        if version >= 3 and not (
            _SOFTWARE.fullmatch(request.client_software_name) and _SOFTWARE.fullmatch(request.client_software_version)
        ):
            return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
        return ApiVersionsResponse(api_keys=tuple(self._entry(key) for key in sorted(SERVED_API_KEYS)))

    def _api_versions_fallback(self) -> ApiVersionsResponse:
        return unsupported_version_answer(self._versions[ApiKey.API_VERSIONS])

    def _entry(self, key: int) -> ApiVersionsResponseApiVersion:
        versions = self._versions[key]
        return ApiVersionsResponseApiVersion(api_key=key, min_version=versions.lowest, max_version=versions.highest)

    # ------------------------------------------------------------------ epochs
    def _check_epochs(self, broker_epoch: int, controller_epoch: int) -> int:
        """The whole-request error code (0 when the request may proceed; records the controller epoch)."""
        current = self.broker_epoch()
        if broker_epoch != NO_EPOCH and broker_epoch < current:
            log.info("broker %d: stale broker epoch %d < %d", self.broker_id, broker_epoch, current)
            return ErrorCode.STALE_BROKER_EPOCH
        if controller_epoch < self.controller_epoch:
            log.info(
                "broker %d: stale controller epoch %d < %d", self.broker_id, controller_epoch, self.controller_epoch
            )
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.controller_epoch = controller_epoch
        return ErrorCode.NONE

    def _known(self, topic_name: str, partition: int) -> PartitionView | None:
        view = self.partitions.get((topic_name, partition))
        return None if view is None or view.deleted else view

    # ------------------------------------------------------------------ LeaderAndIsr
    def _leader_and_isr(self, request: LeaderAndIsrRequest, version: int) -> LeaderAndIsrResponse:
        states = flatten_states(request, version)
        error = self._check_epochs(request.broker_epoch, request.controller_epoch)
        if error:
            return _leader_and_isr_response(
                version, [(name, tid, s.partition_index, error) for name, tid, s in states], error
            )
        results = [(name, tid, s.partition_index, self._become(name, tid, s, version)) for name, tid, s in states]
        if version >= 5 and request.type_ == TYPE_FULL:
            self._delete_strays({(name, s.partition_index) for name, _, s in states})
        return _leader_and_isr_response(version, results, ErrorCode.NONE)

    def _become(
        self, topic_name: str, topic_id: uuid.UUID, state: LeaderAndIsrRequestPartitionState, version: int
    ) -> int:
        if self.broker_id not in state.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        view = self._known(topic_name, state.partition_index)
        if view is not None and state.leader_epoch < view.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if (
            view is not None
            and state.leader_epoch == view.leader_epoch
            and state.partition_epoch < view.partition_epoch
        ):
            return ErrorCode.NONE
        self.partitions[(topic_name, state.partition_index)] = PartitionView(
            topic_name=topic_name,
            topic_id=topic_id if topic_id != ZERO_UUID or view is None else view.topic_id,
            partition=state.partition_index,
            leader=state.leader,
            leader_epoch=state.leader_epoch,
            isr=state.isr,
            partition_epoch=state.partition_epoch,
            replicas=state.replicas,
            leader_recovery_state=state.leader_recovery_state,
            recovery_known=version >= 6,
        )
        return ErrorCode.NONE

    def _delete_strays(self, named: set[tuple[str, int]]) -> None:
        for key, view in list(self.partitions.items()):
            if key not in named and not view.deleted:
                self.partitions[key] = replace(view, stopped=True, deleted=True)

    # ------------------------------------------------------------------ StopReplica
    def _stop_replica(self, request: StopReplicaRequest, version: int) -> StopReplicaResponse:
        error = self._check_epochs(request.broker_epoch, request.controller_epoch)
        if error:
            return StopReplicaResponse(error_code=error)
        results = tuple(
            StopReplicaResponsePartitionError(
                topic_name=stop.topic_name, partition_index=stop.partition, error_code=self._stop(stop)
            )
            for stop in flatten_stops(request, version)
        )
        return StopReplicaResponse(partition_errors=results)

    def _stop(self, stop: Stop) -> int:
        view = self._known(stop.topic_name, stop.partition)
        if view is None:
            return ErrorCode.NONE
        if stop.leader_epoch not in (NO_EPOCH, DELETE_EPOCH) and stop.leader_epoch < view.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        self.partitions[(stop.topic_name, stop.partition)] = replace(view, stopped=True, deleted=stop.delete)
        return ErrorCode.NONE


# ---------------------------------------------------------------------- helpers
def _peer(stream: trio.abc.Stream) -> str:
    transport = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
    if not isinstance(transport, trio.SocketStream):
        return "?"
    try:
        host, port = transport.socket.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"


def _limited(versions: Versions, highest: int | None) -> Versions:
    return versions if highest is None else Versions(versions.lowest, min(versions.highest, highest))


def flatten_states(
    request: LeaderAndIsrRequest, version: int
) -> list[tuple[str, uuid.UUID, LeaderAndIsrRequestPartitionState]]:
    if version < 2:
        return [(s.topic_name, ZERO_UUID, s) for s in request.ungrouped_partition_states]
    return [(t.topic_name, t.topic_id, s) for t in request.topic_states for s in t.partition_states]


def decided_stops(request: StopReplicaRequest, version: int, response: StopReplicaResponse) -> list[tuple[Stop, int]]:
    """The partitions of a StopReplica, each with its answer's error (in the request's order); none
    when the request was refused whole."""
    if response.error_code != ErrorCode.NONE:
        return []
    answers = response.partition_errors
    return [(stop, answer.error_code) for stop, answer in zip(flatten_stops(request, version), answers, strict=False)]


def request_digest(request: Data) -> str:
    """A digest of a decoded request body, every field included (epochs, type, partitions): two
    requests with the same digest carry the same content."""
    return hashlib.sha256(repr(request).encode()).hexdigest()[:16]


def request_type(request: LeaderAndIsrRequest, version: int) -> int:
    """A LeaderAndIsr's type: 1 incremental, 2 full (v5+); 0 for v0-4, which carry none."""
    return request.type_ if version >= 5 else 0


def flatten_stops(request: StopReplicaRequest, version: int) -> list[Stop]:
    if version == 0:
        delete = request.delete_partitions
        return [Stop(p.topic_name, p.partition_index, NO_EPOCH, delete) for p in request.ungrouped_partitions]
    if version < 3:
        delete = request.delete_partitions
        return [Stop(t.name, index, NO_EPOCH, delete) for t in request.topics for index in t.partition_indexes]
    return [
        Stop(t.topic_name, p.partition_index, p.leader_epoch, p.delete_partition)
        for t in request.topic_states
        for p in t.partition_states
    ]


def _leader_and_isr_response(
    version: int, results: list[tuple[str, uuid.UUID, int, int]], error: int
) -> LeaderAndIsrResponse:
    """v0-4: partition errors naming their topic; v5+: grouped under topic ids (in order of appearance)."""
    if version < 5:
        errors = tuple(
            LeaderAndIsrResponsePartitionError(topic_name=name, partition_index=index, error_code=code)
            for name, _, index, code in results
        )
        return LeaderAndIsrResponse(error_code=error, partition_errors=errors)
    grouped: dict[uuid.UUID, list[LeaderAndIsrResponsePartitionError]] = {}
    for _, topic_id, index, code in results:
        grouped.setdefault(topic_id, []).append(
            LeaderAndIsrResponsePartitionError(partition_index=index, error_code=code)
        )
    topics = tuple(
        LeaderAndIsrResponseTopicError(topic_id=topic_id, partition_errors=tuple(errors))
        for topic_id, errors in grouped.items()
    )
    return LeaderAndIsrResponse(error_code=error, topics=topics)
