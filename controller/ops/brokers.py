"""Broker lifecycle: registration, heartbeats, fencing and unfencing, controlled shutdown.

Rules (docs/semantics.md "Brokers" and "ControlledShutdown"):
- A new incarnation gets epoch = the offset of its RegisterBrokerRecord, starts fenced, out of
  controlled shutdown, with its offline replicas back online; the same incarnation keeps its
  epoch and flags. A different incarnation while the current one has a valid session is
  DUPLICATE_BROKER_REGISTRATION.
- Heartbeats carry the exact broker epoch (else STALE_BROKER_EPOCH). A fenced, caught-up broker
  that does not want fencing is unfenced, and leaderless partitions whose ISR holds it elect it.
- Controlled shutdown (the API, or WantShutDown): flag the broker once, take it out of the ISRs
  of partitions with more than one replica, hand its leaderships to the first eligible ISR
  member; a leadership with no eligible successor stays where it is (ZooKeeper-era rule).
  `RemainingPartitions` / `ShouldShutDown` report what it still leads.
- Fencing (session expiry, WantFence, the end of a controlled shutdown) removes the broker from
  every ISR and leadership, one broker at a time.
- Operations over a broker's partitions are written in bounded batches (`ops.batches`), each
  decided on the state the previous ones left. The broker's own record leads (registration,
  the InControlledShutdown flag, unfencing) or closes (fencing) the sequence: a crash between
  batches leaves a broker flagged but not yet moved off every partition (a retry finishes it),
  or moved off some partitions but not yet fenced (it rejoins through its leaders); never a
  fenced broker still in an ISR or leading.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from protocol.error_codes import ErrorCode
from protocol.ids import BrokerEpoch
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import (
    ControlledShutdownRequest,
    ControlledShutdownResponse,
    ControlledShutdownResponseRemainingPartition,
)
from protocol.records.metadata import (
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
)

from ..state.controller_state import ControllerState, Outcome, RecordAndVersion, Result, Steps
from ..state.model import BrokerRegistration, PartitionRegistration, TopicPartition
from .batches import answered_after, in_several_batches, partition_batches
from .changes import bring_online, change_record, eligible, others_eligible, removal, versioned

FENCE = 1
UNFENCE = -1


# ---------------------------------------------------------------------- registration
def register(state: ControllerState, request: BrokerRegistrationRequest, now_ns: int, next_offset: int) -> Outcome:
    def fail(code: ErrorCode) -> Result:
        return Result(BrokerRegistrationResponse(error_code=code))

    if request.broker_id < 0:
        # Kafka's brokers enforce node.id >= 0 and -1 means "no leader" on the wire; refused
        # here, a negative id is an unknown broker to every other request
        return fail(ErrorCode.INVALID_REQUEST)
    if request.cluster_id != state.config.cluster_id:
        return fail(ErrorCode.INCONSISTENT_CLUSTER_ID)
    existing = state.cluster.get(request.broker_id)
    if (
        existing is not None
        and existing.incarnation_id != request.incarnation_id
        and not existing.fenced
        and state.heartbeats.session_alive(request.broker_id, now_ns)
    ):
        return fail(ErrorCode.DUPLICATE_BROKER_REGISTRATION)
    if request.is_migrating_zk_broker:
        return fail(ErrorCode.BROKER_ID_NOT_REGISTERED)
    same = existing if existing is not None and existing.incarnation_id == request.incarnation_id else None
    hosted = state.replication.hosted_by(request.broker_id) if same is None else []
    # the broker epoch is the offset of its registration: after the Begin of a transaction if any
    epoch = same.epoch if same is not None else next_offset + in_several_batches(state, 1 + len(hosted))
    response = BrokerRegistrationResponse(broker_epoch=BrokerEpoch(epoch))
    registered: list[RecordAndVersion] = [versioned(_registration_record(request, epoch, same))]
    if same is not None:
        state.heartbeats.touch(request.broker_id, now_ns)
        return Result(response, tuple(registered))
    state.heartbeats.forget(request.broker_id)
    state.heartbeats.touch(request.broker_id, now_ns)
    # a new incarnation starts with every replica online (after the registration, in steps)
    return answered_after(response, _bring_replicas_online(state, request.broker_id, registered, hosted))


def _bring_replicas_online(
    state: ControllerState, broker_id: int, first: list[RecordAndVersion], hosted: Sequence[TopicPartition]
) -> Iterator[list[RecordAndVersion]]:
    def online(tp: TopicPartition, part: PartitionRegistration) -> PartitionChangeRecord | None:
        return bring_online(state, tp, part, broker_id, may_lead=False) if part.is_offline(broker_id) else None

    return partition_batches(state, hosted, online, name=f"registration of broker {broker_id}", first=first)


def _registration_record(
    request: BrokerRegistrationRequest, epoch: int, same: BrokerRegistration | None
) -> RegisterBrokerRecord:
    """The incarnation's registration; the same incarnation again keeps its flags, a new one starts fenced."""
    return RegisterBrokerRecord(
        broker_id=request.broker_id,
        incarnation_id=request.incarnation_id,
        broker_epoch=epoch,
        end_points=tuple(
            RegisterBrokerRecordBrokerEndpoint(
                name=listener.name, host=listener.host, port=listener.port, security_protocol=listener.security_protocol
            )
            for listener in request.listeners
        ),
        rack=request.rack,
        fenced=same.fenced if same is not None else True,
        in_controlled_shutdown=same.in_controlled_shutdown if same is not None else False,
        log_dirs=request.log_dirs,
    )


# ---------------------------------------------------------------------- fencing
def fence(
    state: ControllerState, broker: BrokerRegistration, first: Sequence[RecordAndVersion] = ()
) -> Iterator[list[RecordAndVersion]]:
    """Batches that fence a broker: out of every ISR and leadership, then the flag."""
    broker_id = broker.broker_id

    def remove(tp: TopicPartition, part: PartitionRegistration) -> PartitionChangeRecord | None:
        return removal(tp, part, broker_id, others_eligible(state, part, broker_id))

    tps = state.replication.in_isr_or_leading(broker_id)
    flag = BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker.epoch, fenced=FENCE)
    return partition_batches(
        state, tps, remove, name=f"fencing of broker {broker_id}", first=first, last=[versioned(flag)]
    )


def unfence(state: ControllerState, broker: BrokerRegistration) -> Iterator[list[RecordAndVersion]]:
    """Batches that unfence a broker, and elect it where a partition has no leader and its ISR holds it."""
    broker_id = broker.broker_id
    flag = [versioned(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker.epoch, fenced=UNFENCE))]

    def elect(tp: TopicPartition, part: PartitionRegistration) -> PartitionChangeRecord | None:
        if part.has_leader or part.is_offline(broker_id):
            return None
        candidates = [r for r in part.replicas if r in part.isr]
        leader = next((r for r in candidates if r == broker_id or eligible(state, part, r)), None)
        return None if leader is None else change_record(tp, part, leader=leader)

    tps = [] if broker.in_controlled_shutdown else state.replication.isrs_with(broker_id)
    return partition_batches(state, tps, elect, name=f"unfencing of broker {broker_id}", first=flag)


def expired_session(state: ControllerState, now_ns: int) -> Outcome | None:
    """Fence the unfenced broker whose session ran out first (one per call, as Kafka does)."""
    expired = state.heartbeats.expired(state.cluster.unfenced_ids(), now_ns)
    if not expired:
        return None
    broker = state.cluster.get(expired[0])
    assert broker is not None
    return answered_after(None, fence(state, broker))


# ---------------------------------------------------------------------- controlled shutdown
def _shutdown_batches(state: ControllerState, broker: BrokerRegistration) -> Iterator[list[RecordAndVersion]]:
    """The InControlledShutdown flag, then the broker out of the ISRs of partitions with more
    than one replica, its leaderships handed to the first eligible ISR member (or kept)."""
    broker_id = broker.broker_id

    def leave(tp: TopicPartition, part: PartitionRegistration) -> PartitionChangeRecord | None:
        if len(part.replicas) <= 1:
            return None
        return removal(tp, part, broker_id, others_eligible(state, part, broker_id), keep_stuck_leader=True)

    return partition_batches(
        state,
        state.replication.isrs_with(broker_id),
        leave,
        name=f"controlled shutdown of broker {broker_id}",
        first=_shutdown_flag(broker),
    )


def _remaining(state: ControllerState, broker_id: int) -> list[TopicPartition]:
    """Partitions with more than one replica the broker still leads."""
    remaining = []
    for tp in state.replication.led_by(broker_id):
        part = state.replication.partition(tp)
        if part is not None and len(part.replicas) > 1:
            remaining.append(tp)
    return remaining


def _shutdown_flag(broker: BrokerRegistration) -> list[RecordAndVersion]:
    """The InControlledShutdown flag (KIP-841), written once per incarnation."""
    if broker.in_controlled_shutdown:
        return []
    flag = BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id, broker_epoch=broker.epoch, in_controlled_shutdown=1
    )
    return [versioned(flag)]


def controlled_shutdown(state: ControllerState, request: ControlledShutdownRequest, version: int) -> Outcome:
    broker = state.cluster.get(request.broker_id)
    if broker is None:
        return Result(ControlledShutdownResponse(error_code=ErrorCode.BROKER_NOT_AVAILABLE))
    if version >= 2 and request.broker_epoch not in (-1, broker.epoch):
        return Result(ControlledShutdownResponse(error_code=ErrorCode.STALE_BROKER_EPOCH))
    return _shut_down(state, broker)


def _shut_down(state: ControllerState, broker: BrokerRegistration) -> Steps:
    yield from _shutdown_batches(state, broker)
    return ControlledShutdownResponse(
        remaining_partitions=tuple(
            ControlledShutdownResponseRemainingPartition(
                topic_name=state.replication.topics[tp.topic_id].name, partition_index=tp.partition
            )
            for tp in _remaining(state, broker.broker_id)
        )
    )


# ---------------------------------------------------------------------- heartbeat
def heartbeat_timed_out(state: ControllerState, request: BrokerHeartbeatRequest, now_ns: int) -> None:
    """A heartbeat that waited past its deadline without being decided (Kafka's
    processExpiredBrokerHeartbeat): it is answered REQUEST_TIMED_OUT, yet its broker was alive
    when it sent it, so its session is kept (if the epoch is its registration's), and nothing else
    changes: a controller busy with long work fences nobody for its own delay."""
    broker = state.cluster.get(request.broker_id)
    if broker is not None and broker.epoch == request.broker_epoch:
        state.heartbeats.touch(broker.broker_id, now_ns, request.current_metadata_offset)


def heartbeat(state: ControllerState, request: BrokerHeartbeatRequest, now_ns: int) -> Outcome:
    broker = state.cluster.get(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        return Result(BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH))
    state.heartbeats.touch(broker.broker_id, now_ns, request.current_metadata_offset)
    caught_up = request.current_metadata_offset >= broker.epoch

    def answer(fenced: bool, shut_down: bool, batches: Iterator[list[RecordAndVersion]] | None = None) -> Outcome:
        response = BrokerHeartbeatResponse(is_caught_up=caught_up, is_fenced=fenced, should_shut_down=shut_down)
        return Result(response) if batches is None else answered_after(response, batches)

    if broker.fenced:
        if request.want_shut_down or broker.in_controlled_shutdown:
            # only a new incarnation leaves controlled shutdown: a shut-down broker stays fenced
            return answer(True, True)
        if not request.want_fence and caught_up:
            return answer(False, False, unfence(state, broker))
        return answer(True, False)
    if request.want_fence:
        return answer(True, request.want_shut_down, fence(state, broker))
    if broker.in_controlled_shutdown or request.want_shut_down:
        if not _remaining(state, broker.broker_id):
            # leads nothing it could hand over: shut down now (Kafka's SHUTDOWN_NOW fences it)
            return answer(True, True, fence(state, broker, first=_shutdown_flag(broker)))
        return answer(False, False, _shutdown_batches(state, broker))
    return answer(False, False)
