"""Broker lifecycle: BrokerRegistration, BrokerHeartbeat, session-timeout fencing, ControlledShutdown."""

from __future__ import annotations

import dataclasses

import pytest

from controller.state.controller_state import ControllerConfig
from protocol.error_codes import ErrorCode
from protocol.messages.alter_replica_state import OFFLINE
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import BrokerRegistrationResponse
from protocol.messages.controlled_shutdown import (
    ControlledShutdownResponse,
    ControlledShutdownResponseRemainingPartition,
)
from protocol.records.metadata import (
    UNASSIGNED_DIRECTORY,
    BrokerRegistrationChangeRecord,
    PartitionChangeRecord,
    RegisterBrokerRecord,
    RegisterBrokerRecordBrokerEndpoint,
)

from ..harness import Harness, incarnation

REGISTRATION_VERSIONS = [0, 1, 2, 3, 4]
SHUTDOWN_VERSIONS = [0, 1, 2, 3]


def cluster(*broker_ids: int) -> Harness:
    h = Harness()
    h.start_brokers(*broker_ids)
    return h


def register_record(
    broker_id: int, generation: int, epoch: int, *, fenced: bool, in_controlled_shutdown: bool
) -> RegisterBrokerRecord:
    endpoint = RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="localhost", port=9000 + broker_id)
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=incarnation(broker_id, generation),
        broker_epoch=epoch,
        end_points=(endpoint,),
        rack=None,
        fenced=fenced,
        in_controlled_shutdown=in_controlled_shutdown,
    )


def fenced_flag(h: Harness, broker_id: int, fenced: int) -> BrokerRegistrationChangeRecord:
    return BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=h.epoch(broker_id), fenced=fenced)


def shutdown_flag(h: Harness, broker_id: int) -> BrokerRegistrationChangeRecord:
    return BrokerRegistrationChangeRecord(
        broker_id=broker_id, broker_epoch=h.epoch(broker_id), in_controlled_shutdown=1
    )


# ====================================================================== BrokerRegistration
@pytest.mark.parametrize("version", REGISTRATION_VERSIONS)
def test_first_registration_gets_the_offset_of_its_record_as_epoch_and_starts_fenced(version: int) -> None:
    h = cluster(0)
    offset = h.next_offset
    response, records = h.send(h.registration(1), version)
    assert response == BrokerRegistrationResponse(broker_epoch=offset)
    assert records == [register_record(1, 0, offset, fenced=True, in_controlled_shutdown=False)]
    assert h.log[offset][0] is records[0]
    broker = h.core.state.cluster.get(1)
    assert broker is not None and (broker.epoch, broker.fenced, broker.in_controlled_shutdown) == (offset, True, False)


@pytest.mark.parametrize("version", REGISTRATION_VERSIONS)
def test_cluster_id_mismatch_is_inconsistent_cluster_id(version: int) -> None:
    h = cluster(0)
    log_length = len(h.log)
    request = dataclasses.replace(h.registration(1), cluster_id="another-cluster")
    response, records = h.send(request, version)
    assert response == BrokerRegistrationResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
    assert records == [] and len(h.log) == log_length
    assert h.core.state.cluster.get(1) is None


@pytest.mark.parametrize("broker_id", [-1, -2, -(2**31)])
@pytest.mark.parametrize("version", REGISTRATION_VERSIONS)
def test_a_negative_broker_id_is_invalid_request(version: int, broker_id: int) -> None:
    h = cluster(0)
    log_length = len(h.log)
    response, records = h.send(dataclasses.replace(h.registration(5), broker_id=broker_id), version)
    assert response == BrokerRegistrationResponse(error_code=ErrorCode.INVALID_REQUEST)
    assert records == [] and len(h.log) == log_length
    assert h.core.state.cluster.get(broker_id) is None


def test_a_refused_negative_id_is_an_unknown_broker_to_every_other_request() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    epoch = h.next_offset  # what the registration would have been given
    h.send(dataclasses.replace(h.registration(5), broker_id=-1), 3)
    log_length = len(h.log)
    heartbeat, _ = h.send(BrokerHeartbeatRequest(broker_id=-1, broker_epoch=epoch, current_metadata_offset=epoch), 1)
    assert heartbeat.error_code == ErrorCode.STALE_BROKER_EPOCH
    shutdown, _ = h.controlled_shutdown(-1, broker_epoch=epoch)
    assert shutdown.error_code == ErrorCode.BROKER_NOT_AVAILABLE
    alter, _ = h.alter_isr("t", 0, [0, 1], broker_id=-1, broker_epoch=epoch)
    assert (alter.error_code, alter.topics) == (ErrorCode.STALE_BROKER_EPOCH, ())
    replica_state, _ = h.alter_replica_state(-1, "t", [0], OFFLINE, broker_epoch=epoch)
    assert (replica_state.error_code, replica_state.topics) == (ErrorCode.STALE_BROKER_EPOCH, ())
    assert len(h.log) == log_length
    assert (h.partition("t").leader, h.partition("t").isr) == (0, (0, 1, 2))


def test_new_incarnation_while_the_old_one_has_a_live_session_is_duplicate() -> None:
    h = cluster(0, 1)
    h.advance(9000)  # still within the session (last contact + timeout >= now)
    log_length = len(h.log)
    response, records = h.send(h.registration(0, generation=1), 3)
    assert response == BrokerRegistrationResponse(error_code=ErrorCode.DUPLICATE_BROKER_REGISTRATION)
    assert records == [] and len(h.log) == log_length
    broker = h.core.state.cluster.get(0)
    assert broker is not None and broker.incarnation_id == incarnation(0, 0) and not broker.fenced


def test_new_incarnation_is_accepted_once_the_session_expired_even_before_fencing() -> None:
    h = cluster(0, 1)
    h.advance(9001, expire=False)
    assert not h.core.state.cluster.brokers[0].fenced
    offset = h.next_offset
    response, records = h.send(h.registration(0, generation=1), 3)
    assert response == BrokerRegistrationResponse(broker_epoch=offset)
    assert records == [register_record(0, 1, offset, fenced=True, in_controlled_shutdown=False)]


def test_new_incarnation_is_accepted_once_fenced_within_the_session() -> None:
    h = cluster(0, 1)
    assert h.heartbeat(0, want_fence=True).is_fenced
    offset = h.next_offset
    response, records = h.send(h.registration(0, generation=1), 3)
    assert response == BrokerRegistrationResponse(broker_epoch=offset)
    assert records == [register_record(0, 1, offset, fenced=True, in_controlled_shutdown=False)]


def test_new_incarnation_leaves_controlled_shutdown_and_brings_offline_replicas_back_online() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2], [1, 2, 0]])
    h.alter_replica_state(2, "t", [0, 1], OFFLINE)
    h.controlled_shutdown(2)
    h.heartbeat(2, want_fence=True)
    broker = h.core.state.cluster.brokers[2]
    assert broker.fenced and broker.in_controlled_shutdown
    assert h.partition("t", 0).is_offline(2) and h.partition("t", 1).is_offline(2)
    old_epoch = broker.epoch

    offset = h.next_offset
    response, records = h.send(h.registration(2, generation=1), 3)
    assert response == BrokerRegistrationResponse(broker_epoch=offset)
    tid = h.topic_id("t")
    online = (UNASSIGNED_DIRECTORY,) * 3
    assert records == [
        register_record(2, 1, offset, fenced=True, in_controlled_shutdown=False),
        PartitionChangeRecord(partition_id=0, topic_id=tid, directories=online),
        PartitionChangeRecord(partition_id=1, topic_id=tid, directories=online),
    ]
    assert [version for _, version, _ in h.log[offset + 1 :]] == [1, 1]  # directories need PartitionChangeRecord v1
    broker = h.core.state.cluster.brokers[2]
    assert (broker.epoch, broker.fenced, broker.in_controlled_shutdown) == (offset, True, False)
    assert offset > old_epoch
    assert not h.partition("t", 0).is_offline(2) and not h.partition("t", 1).is_offline(2)
    # online, not yet back in the ISRs, and it leads nothing (it is fenced)
    assert 2 not in h.partition("t", 0).isr and h.partition("t", 1).leader != 2


def test_same_incarnation_keeps_its_epoch_and_flags_and_takes_the_new_listener() -> None:
    h = cluster(0, 1)
    h.controlled_shutdown(0)
    epoch = h.epoch(0)
    response, records = h.send(h.registration(0, port=19000), 3)
    assert response == BrokerRegistrationResponse(broker_epoch=epoch)
    expected = dataclasses.replace(
        register_record(0, 0, epoch, fenced=False, in_controlled_shutdown=True),
        end_points=(RegisterBrokerRecordBrokerEndpoint(name="PLAINTEXT", host="localhost", port=19000),),
    )
    assert records == [expected]
    broker = h.core.state.cluster.brokers[0]
    assert (broker.epoch, broker.fenced, broker.in_controlled_shutdown) == (epoch, False, True)
    assert broker.listeners[0].port == 19000


def test_same_incarnation_of_a_fenced_broker_stays_fenced_with_the_same_epoch() -> None:
    h = Harness()
    epoch = h.register(0)
    response, records = h.send(h.registration(0), 3)
    assert response == BrokerRegistrationResponse(broker_epoch=epoch)
    assert records == [register_record(0, 0, epoch, fenced=True, in_controlled_shutdown=False)]


def test_broker_epochs_strictly_increase_across_incarnations() -> None:
    h = cluster(0, 1)
    epochs = [h.epoch(0)]
    for generation in range(1, 5):
        h.heartbeat(0, want_fence=True)
        h.heartbeat(1)
        epochs.append(h.register(0, generation=generation))
        h.register(0, generation=generation)  # the same incarnation again changes nothing
        assert h.epoch(0) == epochs[-1]
    assert epochs == sorted(set(epochs))


# ====================================================================== BrokerHeartbeat
def test_heartbeat_from_an_unknown_broker_is_stale_broker_epoch() -> None:
    h = cluster(0)
    log_length = len(h.log)
    response, records = h.send(BrokerHeartbeatRequest(broker_id=9, broker_epoch=0, current_metadata_offset=100), 1)
    assert response == BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert records == [] and len(h.log) == log_length


@pytest.mark.parametrize("delta", [-1, 1], ids=["older", "newer"])
@pytest.mark.parametrize("fenced", [True, False])
def test_heartbeat_with_another_epoch_is_stale_broker_epoch(delta: int, fenced: bool) -> None:
    h = Harness()
    h.register(0)
    if not fenced:
        h.heartbeat(0)
    log_length = len(h.log)
    response = h.heartbeat(0, broker_epoch=h.epoch(0) + delta)
    assert response == BrokerHeartbeatResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert len(h.log) == log_length
    assert h.core.state.cluster.brokers[0].fenced is fenced


def test_caught_up_fenced_broker_is_unfenced() -> None:
    h = Harness()
    epoch = h.register(0)
    response, records = h.send(
        BrokerHeartbeatRequest(broker_id=0, broker_epoch=epoch, current_metadata_offset=epoch), 1
    )
    assert response == BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False, should_shut_down=False)
    assert records == [BrokerRegistrationChangeRecord(broker_id=0, broker_epoch=epoch, fenced=-1)]
    assert not h.core.state.cluster.brokers[0].fenced


def test_fenced_broker_behind_its_registration_stays_fenced() -> None:
    h = cluster(0)
    epoch = h.register(1)
    log_length = len(h.log)
    response = h.heartbeat(1, current_metadata_offset=epoch - 1)
    assert response == BrokerHeartbeatResponse(is_caught_up=False, is_fenced=True, should_shut_down=False)
    assert len(h.log) == log_length
    assert h.core.state.cluster.brokers[1].fenced


def test_fenced_broker_that_wants_fencing_stays_fenced_even_when_caught_up() -> None:
    h = Harness()
    h.register(0)
    log_length = len(h.log)
    response = h.heartbeat(0, want_fence=True)
    assert response == BrokerHeartbeatResponse(is_caught_up=True, is_fenced=True, should_shut_down=False)
    assert len(h.log) == log_length


def test_is_caught_up_reports_the_metadata_offset_against_the_registration() -> None:
    h = cluster(0)
    epoch = h.epoch(0)
    assert not h.heartbeat(0, current_metadata_offset=epoch - 1).is_caught_up
    assert h.heartbeat(0, current_metadata_offset=epoch).is_caught_up
    behind = h.heartbeat(0, current_metadata_offset=epoch - 1)
    assert not behind.is_fenced  # being behind does not fence an unfenced broker


def test_want_fence_fences_an_unfenced_broker() -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[0, 1]])
    tid = h.topic_id("t")
    flag = fenced_flag(h, 0, 1)
    response, records = h.send(
        BrokerHeartbeatRequest(
            broker_id=0, broker_epoch=h.epoch(0), current_metadata_offset=h.next_offset, want_fence=True
        ),
        1,
    )
    assert response == BrokerHeartbeatResponse(is_caught_up=True, is_fenced=True, should_shut_down=False)
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1,), leader=1), flag]
    assert h.core.state.cluster.brokers[0].fenced


def test_want_shut_down_while_leading_enters_controlled_shutdown_then_shuts_down() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    tid = h.topic_id("t")
    flag = shutdown_flag(h, 0)
    offset = h.next_offset
    response = h.heartbeat(0, want_shut_down=True)
    assert response == BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False, should_shut_down=False)
    assert [record for record, _, _ in h.log[offset:]] == [
        flag,
        PartitionChangeRecord(partition_id=0, topic_id=tid, isr=(1, 2), leader=1),
    ]
    assert h.log[offset][1] == 1  # InControlledShutdown needs BrokerRegistrationChangeRecord v1
    assert h.core.state.cluster.brokers[0].in_controlled_shutdown

    offset = h.next_offset
    response = h.heartbeat(0, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced
    assert [record for record, _, _ in h.log[offset:]] == [fenced_flag(h, 0, 1)]


def test_want_shut_down_keeps_should_shut_down_false_while_a_leadership_cannot_move() -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[0, 1]])
    h.alter_isr("t", 0, [0])
    for _ in range(3):
        response = h.heartbeat(0, want_shut_down=True)
        assert response == BrokerHeartbeatResponse(is_caught_up=True, is_fenced=False, should_shut_down=False)
    flags = [r for r, _, _ in h.log if isinstance(r, BrokerRegistrationChangeRecord) and r.in_controlled_shutdown]
    assert len(flags) == 1  # written once
    assert h.partition("t").leader == 0


def test_want_shut_down_when_leading_nothing_shuts_down_at_once() -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[1, 0]])
    response = h.heartbeat(0, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced
    assert h.core.state.cluster.brokers[0].fenced
    assert h.partition("t").isr == (1,)


# ====================================================================== session timeout
def test_a_shut_down_broker_stays_fenced_until_a_new_incarnation_registers() -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[1, 0]])
    assert h.heartbeat(0, want_shut_down=True).is_fenced
    offset = h.next_offset
    for _ in range(2):
        # caught up and not asking for anything: still fenced, still told to shut down, nothing written
        response = h.heartbeat(0)
        assert response == BrokerHeartbeatResponse(is_caught_up=True, is_fenced=True, should_shut_down=True)
    assert h.next_offset == offset
    h.register(0, generation=1)
    assert not h.heartbeat(0).is_fenced


def test_default_session_timeout_is_nine_seconds() -> None:
    assert ControllerConfig(cluster_id="c").session_timeout_ms == 9000
    h = cluster(0)
    assert h.advance(9000) == []
    assert len(h.advance(1)) == 1
    assert h.core.state.cluster.brokers[0].fenced


def test_a_broker_heard_from_within_the_timeout_is_kept() -> None:
    h = cluster(0, 1, 2)
    h.advance(5000)
    h.heartbeat(0)
    h.heartbeat(1)
    fencings = h.advance(5000)
    assert fencings == [[fenced_flag(h, 2, 1)]]
    assert [b for b, reg in sorted(h.core.state.cluster.brokers.items()) if reg.fenced] == [2]


def test_session_expiry_fences_and_moves_leadership_by_assignment_order() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("led", assignments=[[2, 0, 1]])  # leader 2 -> 0
    h.create_topic("followed", assignments=[[0, 2, 1]])  # ISR loses 2, leader stays
    h.create_topic("last", assignments=[[2, 1, 0]])  # ISR [2]: kept, leader -1
    h.create_topic("order", assignments=[[2, 1, 0]])  # ISR [2, 0, 1]: the new leader is 1, by assignment order
    h.alter_isr("last", 0, [2])
    h.alter_isr("order", 0, [2, 0, 1])
    before = {name: h.partition(name) for name in ("led", "followed", "last", "order")}
    h.advance(5000)
    h.heartbeat(0)
    h.heartbeat(1)
    [records] = h.advance(5000)
    tid = h.topic_id
    assert records == [
        PartitionChangeRecord(partition_id=0, topic_id=tid("followed"), isr=(0, 1)),
        PartitionChangeRecord(partition_id=0, topic_id=tid("last"), leader=-1),
        PartitionChangeRecord(partition_id=0, topic_id=tid("led"), isr=(0, 1), leader=0),
        PartitionChangeRecord(partition_id=0, topic_id=tid("order"), isr=(0, 1), leader=1),
        fenced_flag(h, 2, 1),
    ]
    expected = {"led": (0, (0, 1), 1), "followed": (0, (0, 1), 0), "last": (-1, (2,), 1), "order": (1, (0, 1), 1)}
    for name, (leader, isr, epoch_bump) in expected.items():
        after = h.partition(name)
        assert (after.leader, after.isr) == (leader, isr), name
        assert after.leader_epoch == before[name].leader_epoch + epoch_bump, name
        assert after.partition_epoch == before[name].partition_epoch + 1, name


def test_expiry_skips_offline_replicas_when_moving_leadership() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[2, 0, 1]])
    h.alter_replica_state(0, "t", [0], OFFLINE)
    assert h.partition("t").isr == (2, 1)
    h.advance(5000)
    h.heartbeat(0)
    h.heartbeat(1)
    [records] = h.advance(5000)
    assert records[0] == PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(1,), leader=1)


def test_expiry_fences_one_broker_at_a_time_oldest_contact_first() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1, 2]])
    h.advance(1000)
    h.heartbeat(0)
    fencings = h.advance(9000)
    assert [records[-1] for records in fencings] == [fenced_flag(h, 1, 1), fenced_flag(h, 2, 1)]
    assert h.partition("t").isr == (0,)


# ====================================================================== ControlledShutdown
@pytest.mark.parametrize("version", SHUTDOWN_VERSIONS)
def test_unregistered_broker_is_broker_not_available(version: int) -> None:
    h = cluster(0)
    log_length = len(h.log)
    for epoch in [-1, 0, 5] if version >= 2 else [-1]:
        response, records = h.controlled_shutdown(7, version, broker_epoch=epoch)
        assert response == ControlledShutdownResponse(error_code=ErrorCode.BROKER_NOT_AVAILABLE)
        assert records == []
    assert len(h.log) == log_length


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("delta", [-1, 1], ids=["older", "newer"])
def test_v2_plus_other_epoch_is_stale_broker_epoch(version: int, delta: int) -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[1, 0]])
    assert h.epoch(1) - 1 != -1  # -1 would mean "no epoch"
    log_length = len(h.log)
    response, records = h.controlled_shutdown(1, version, broker_epoch=h.epoch(1) + delta)
    assert response == ControlledShutdownResponse(error_code=ErrorCode.STALE_BROKER_EPOCH)
    assert records == [] and len(h.log) == log_length
    assert not h.core.state.cluster.brokers[1].in_controlled_shutdown


def test_old_incarnation_epoch_cannot_shut_down_the_new_incarnation() -> None:
    h = cluster(0, 1)
    old = h.epoch(0)
    h.heartbeat(0, want_fence=True)
    h.register(0, generation=1)
    h.heartbeat(0)
    response, records = h.controlled_shutdown(0, 3, broker_epoch=old)
    assert response.error_code == ErrorCode.STALE_BROKER_EPOCH and records == []


@pytest.mark.parametrize("version", SHUTDOWN_VERSIONS)
def test_no_epoch_skips_the_check(version: int) -> None:
    """v0-1 carry no epoch; v2-3 may send -1."""
    h = cluster(0, 1)
    response, records = h.controlled_shutdown(0, version, broker_epoch=-1)
    assert response == ControlledShutdownResponse()
    assert records == [shutdown_flag(h, 0)]


@pytest.mark.parametrize("version", SHUTDOWN_VERSIONS)
def test_shutdown_moves_leaderships_drops_followers_and_reports_stuck_leaderships(version: int) -> None:
    h = cluster(0, 1, 2)
    h.create_topic("led", assignments=[[0, 1, 2]])
    h.create_topic("followed", assignments=[[1, 0, 2]])
    h.create_topic("single", assignments=[[0]])
    h.create_topic("stuck", assignments=[[0, 1]])
    h.alter_isr("stuck", 0, [0])
    before = {name: h.partition(name) for name in ("led", "followed", "single", "stuck")}
    offset = h.next_offset
    response, records = h.controlled_shutdown(0, version)
    assert response == ControlledShutdownResponse(
        remaining_partitions=(ControlledShutdownResponseRemainingPartition(topic_name="stuck", partition_index=0),)
    )
    tid = h.topic_id
    assert records == [
        shutdown_flag(h, 0),
        PartitionChangeRecord(partition_id=0, topic_id=tid("followed"), isr=(1, 2)),
        PartitionChangeRecord(partition_id=0, topic_id=tid("led"), isr=(1, 2), leader=1),
    ]
    assert [version for _, version, _ in h.log[offset:]] == [1, 0, 0]
    assert h.partition("led").leader_epoch == before["led"].leader_epoch + 1
    assert h.partition("followed").leader_epoch == before["followed"].leader_epoch
    assert h.partition("single") == before["single"]
    assert h.partition("stuck") == before["stuck"]  # stays leader and in the ISR: the partition stays online
    assert h.core.state.cluster.brokers[0].in_controlled_shutdown


@pytest.mark.parametrize("version", SHUTDOWN_VERSIONS)
def test_flag_is_written_once_and_a_retry_changes_nothing_more(version: int) -> None:
    h = cluster(0, 1)
    h.create_topic("stuck", assignments=[[0, 1]])
    h.alter_isr("stuck", 0, [0])
    first, records = h.controlled_shutdown(0, version)
    assert records == [shutdown_flag(h, 0)]
    log_length = len(h.log)
    second, records = h.controlled_shutdown(0, version)
    assert second == first and [p.topic_name for p in second.remaining_partitions] == ["stuck"]
    assert records == [] and len(h.log) == log_length


def test_a_retry_moves_what_became_movable() -> None:
    h = cluster(0, 1, 2)
    h.create_topic("t", assignments=[[0, 1]])
    # broker 1 bounces before its old session is fenced: the new incarnation is fenced, still in the ISR
    h.advance(5000)
    h.heartbeat(0)
    h.heartbeat(2)
    h.advance(5000, expire=False)
    h.register(1, generation=1)
    assert h.core.state.cluster.brokers[1].fenced and h.partition("t").isr == (0, 1)

    response, records = h.controlled_shutdown(0)
    assert [p.topic_name for p in response.remaining_partitions] == ["t"]
    assert records == [shutdown_flag(h, 0)]

    assert not h.heartbeat(1).is_fenced
    response, records = h.controlled_shutdown(0)
    assert response == ControlledShutdownResponse()
    assert records == [PartitionChangeRecord(partition_id=0, topic_id=h.topic_id("t"), isr=(1,), leader=1)]


@pytest.mark.parametrize("version", SHUTDOWN_VERSIONS)
def test_a_fenced_broker_is_flagged_and_leads_nothing(version: int) -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[0, 1]])
    h.heartbeat(0, want_fence=True)
    response, records = h.controlled_shutdown(0, version)
    assert response == ControlledShutdownResponse()
    assert records == [shutdown_flag(h, 0)]
    broker = h.core.state.cluster.brokers[0]
    assert broker.fenced and broker.in_controlled_shutdown


def test_a_broker_in_controlled_shutdown_cannot_be_elected_or_rejoin() -> None:
    h = cluster(0, 1)
    h.create_topic("t", assignments=[[0, 1]])
    h.controlled_shutdown(1)
    response, records = h.alter_isr("t", 0, [0, 1])
    assert response.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA and records == []
