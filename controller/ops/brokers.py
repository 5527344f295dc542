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
"""

from __future__ import annotations

from protocol.error_codes import ErrorCode
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

from ..state.controller_state import ControllerState, RecordAndVersion, Result
from ..state.frozen import REGISTER_BROKER_VERSION
from ..state.model import BrokerRegistration, TopicPartition
from ..state.replication import change_record, change_version, removal
from .eligibility import others_eligible
from .replica_state import bring_online

FENCE = 1
UNFENCE = -1


def _changes(records: list[PartitionChangeRecord]) -> list[RecordAndVersion]:
    return [(record, change_version(record)) for record in records]


# ---------------------------------------------------------------------- registration
def register(state: ControllerState, request: BrokerRegistrationRequest, now_ns: int, next_offset: int) -> Result:
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
    same = existing is not None and existing.incarnation_id == request.incarnation_id
    epoch = existing.epoch if same and existing is not None else next_offset
    record = RegisterBrokerRecord(
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
        fenced=existing.fenced if same and existing is not None else True,
        in_controlled_shutdown=existing.in_controlled_shutdown if same and existing is not None else False,
        log_dirs=request.log_dirs,
    )
    records: list[RecordAndVersion] = [(record, REGISTER_BROKER_VERSION)]
    if not same:
        records.extend(_changes(_bring_replicas_online(state, request.broker_id)))
        state.heartbeats.forget(request.broker_id)
    state.heartbeats.touch(request.broker_id, now_ns)
    return Result(BrokerRegistrationResponse(broker_epoch=epoch), tuple(records))


def _bring_replicas_online(state: ControllerState, broker_id: int) -> list[PartitionChangeRecord]:
    changes = []
    for tp in state.replication.hosted_by(broker_id):
        part = state.replication.partition(tp)
        if part is not None and part.is_offline(broker_id):
            change = bring_online(state, tp, part, broker_id, may_lead=False)
            if change is not None:
                changes.append(change)
    return changes


# ---------------------------------------------------------------------- fencing
def fence(state: ControllerState, broker: BrokerRegistration) -> list[RecordAndVersion]:
    """Records that fence a broker: out of every ISR and leadership, then the flag."""
    changes = []
    for tp in state.replication.sorted_tps(
        state.replication.in_isr_of.get(broker.broker_id, set())
        | state.replication.leader_of.get(broker.broker_id, set())
    ):
        part = state.replication.partition(tp)
        assert part is not None
        change = removal(tp, part, broker.broker_id, others_eligible(state, part, broker.broker_id))
        if change is not None:
            changes.append(change)
    flag = BrokerRegistrationChangeRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch, fenced=FENCE)
    return [*_changes(changes), (flag, 0)]


def unfence(state: ControllerState, broker: BrokerRegistration) -> list[RecordAndVersion]:
    """Records that unfence a broker, and elect it where a partition has no leader and its ISR holds it."""
    flag = BrokerRegistrationChangeRecord(broker_id=broker.broker_id, broker_epoch=broker.epoch, fenced=UNFENCE)
    changes = []
    if not broker.in_controlled_shutdown:
        for tp in state.replication.isrs_with(broker.broker_id):
            part = state.replication.partition(tp)
            if part is None or part.has_leader or part.is_offline(broker.broker_id):
                continue
            candidates = [r for r in part.replicas if r in part.isr]
            leader = next(
                (r for r in candidates if r == broker.broker_id or state.eligible(part, r)),
                None,
            )
            change = None if leader is None else change_record(tp, part, leader=leader)
            if change is not None:
                changes.append(change)
    return [(flag, 0), *_changes(changes)]


def expired_session(state: ControllerState, now_ns: int) -> Result | None:
    """Fence the unfenced broker whose session ran out first (one per call, as Kafka does)."""
    expired = state.heartbeats.expired(state.cluster.unfenced_ids(), now_ns)
    if not expired:
        return None
    broker = state.cluster.get(expired[0])
    assert broker is not None
    return Result(None, tuple(fence(state, broker)))


# ---------------------------------------------------------------------- controlled shutdown
def _shutdown_changes(state: ControllerState, broker_id: int) -> list[PartitionChangeRecord]:
    changes = []
    for tp in state.replication.isrs_with(broker_id):
        part = state.replication.partition(tp)
        assert part is not None
        if len(part.replicas) <= 1:
            continue
        change = removal(tp, part, broker_id, others_eligible(state, part, broker_id), keep_stuck_leader=True)
        if change is not None:
            changes.append(change)
    return changes


def _remaining(state: ControllerState, broker_id: int, changes: list[PartitionChangeRecord]) -> list[TopicPartition]:
    moved = {TopicPartition(c.topic_id, c.partition_id) for c in changes if c.leader not in (-2, broker_id)}
    remaining = []
    for tp in state.replication.led_by(broker_id):
        part = state.replication.partition(tp)
        if part is not None and len(part.replicas) > 1 and tp not in moved:
            remaining.append(tp)
    return remaining


def _shutdown_flag(broker: BrokerRegistration) -> list[RecordAndVersion]:
    """The InControlledShutdown flag (KIP-841), written once per incarnation."""
    if broker.in_controlled_shutdown:
        return []
    flag = BrokerRegistrationChangeRecord(
        broker_id=broker.broker_id, broker_epoch=broker.epoch, in_controlled_shutdown=1
    )
    return [(flag, 1)]


def _enter_shutdown(
    state: ControllerState, broker: BrokerRegistration
) -> tuple[list[RecordAndVersion], list[TopicPartition]]:
    records = _shutdown_flag(broker)
    changes = _shutdown_changes(state, broker.broker_id)
    records.extend(_changes(changes))
    return records, _remaining(state, broker.broker_id, changes)


def controlled_shutdown(state: ControllerState, request: ControlledShutdownRequest, version: int) -> Result:
    broker = state.cluster.get(request.broker_id)
    if broker is None:
        return Result(ControlledShutdownResponse(error_code=ErrorCode.BROKER_NOT_AVAILABLE))
    if version >= 2 and request.broker_epoch not in (-1, broker.epoch):
        return Result(ControlledShutdownResponse(error_code=ErrorCode.STALE_BROKER_EPOCH))
    records, remaining = _enter_shutdown(state, broker)
    response = ControlledShutdownResponse(
        remaining_partitions=tuple(
            ControlledShutdownResponseRemainingPartition(
                topic_name=state.replication.topics[tp.topic_id].name, partition_index=tp.partition
            )
            for tp in remaining
        )
    )
    return Result(response, tuple(records))


# ---------------------------------------------------------------------- heartbeat
def heartbeat(state: ControllerState, request: BrokerHeartbeatRequest, now_ns: int) -> Result:
    broker = state.cluster.get(request.broker_id)
    if broker is None or broker.epoch != request.broker_epoch:
        return Result(BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH))
    state.heartbeats.touch(broker.broker_id, now_ns, request.current_metadata_offset)
    caught_up = request.current_metadata_offset >= broker.epoch

    def answer(fenced: bool, shut_down: bool, records: list[RecordAndVersion] | None = None) -> Result:
        response = BrokerHeartbeatResponse(is_caught_up=caught_up, is_fenced=fenced, should_shut_down=shut_down)
        return Result(response, tuple(records or ()))

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
        if not _remaining(state, broker.broker_id, []):
            # leads nothing it could hand over: shut down now (Kafka's SHUTDOWN_NOW fences it)
            return answer(True, True, [*_shutdown_flag(broker), *fence(state, broker)])
        records, _ = _enter_shutdown(state, broker)
        return answer(False, False, records)
    return answer(False, False)
