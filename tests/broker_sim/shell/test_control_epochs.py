"""A broker's listener in the fleet journals the controller epochs it goes by: each newer one it
accepts, and each LeaderAndIsr or StopReplica it refuses whole for an older controller epoch than the
newest it has seen (STALE_CONTROLLER_EPOCH) or an older broker epoch (STALE_BROKER_EPOCH): what a
checker needs to hold that no broker acted on an older controller's request than one it had seen.
The listener is the fleet's own (`BrokerRunner.new_listener`), fed the frames the daemon's control
channel would send (controller.control.requests)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
import trio

from broker_sim.journal import (
    ControllerEpochSeen,
    ControlRefused,
    JournalWriter,
    LeaderAndIsrObserved,
    StateObserved,
    StopObserved,
    read_journal,
)
from broker_sim.model.broker import BrokerModel
from broker_sim.model.versions import listener_max_versions
from broker_sim.shell.broker import BrokerRunner
from broker_sim.shell.context import FleetContext
from broker_sim.shell.recorder import Recorder
from broker_sim.stats import FleetStats
from controller.control.orders import ControlOrder, PartitionState, StopPartition
from controller.control.requests import leader_and_isr_request, stop_replica_requests
from protocol.api_keys import ApiKey
from protocol.error_codes import ErrorCode
from protocol.messages.leader_and_isr import LeaderAndIsrResponse
from protocol.messages.stop_replica import StopReplicaResponse
from protocol.registry import decode_response, encode_request
from protocol.spec import Data

from ..model.helpers import TIMING, FakeFollowers, register

BROKER_ID = 1
SEED = 0
TOPIC_ID = uuid.UUID(int=0xF00)


def order(controller_epoch: int, broker_epoch: int = 100, leader_epoch: int = 3) -> ControlOrder:
    state = PartitionState("foo", TOPIC_ID, 0, BROKER_ID, leader_epoch, (1, 2), 5 + leader_epoch, (1, 2), 0)
    stops = (StopPartition("foo", TOPIC_ID, 1, -1, False),)
    return ControlOrder(BROKER_ID, broker_epoch, 3000, controller_epoch, (state,), stops, False)


def runner(journal: Path, seed: int = SEED) -> BrokerRunner:
    recorder = Recorder(FleetStats(), JournalWriter(journal), None, trio.current_time(), time.time_ns())
    ctx = FleetContext(
        controllers=(("127.0.0.1", 1),),
        listen_host="127.0.0.1",
        seed=seed,
        scenario="steady",
        duration_s=10.0,
        timing=TIMING,
        recorder=recorder,
        t0=recorder.t0,
    )
    model = BrokerModel(BROKER_ID, seed, TIMING, FakeFollowers(), {})
    register(model, epoch=100)
    return BrokerRunner(ctx, model)


def send(broker: BrokerRunner, body: Data, version: int) -> int:
    """The whole-request error code the broker's listener answers `body` with."""
    assert broker.listener is not None
    reply = broker.listener.handle_frame(encode_request(body, version, 7)[4:])
    assert reply is not None
    response = decode_response(reply[4:], body.API.key, version)[1]
    assert isinstance(response, LeaderAndIsrResponse | StopReplicaResponse)
    return response.error_code


async def test_newer_controller_epochs_and_refusals_are_journalled(tmp_path: Path) -> None:
    broker = runner(tmp_path / "journal.jsonl")
    broker.new_listener()
    versions = listener_max_versions(SEED, BROKER_ID)
    lai, stop = versions[ApiKey.LEADER_AND_ISR], versions[ApiKey.STOP_REPLICA]

    def leader_and_isr(the_order: ControlOrder) -> int:
        return send(broker, leader_and_isr_request(the_order, lai), lai)

    def stop_replica(the_order: ControlOrder) -> int:
        return send(broker, stop_replica_requests(the_order, stop)[0], stop)

    assert leader_and_isr(order(controller_epoch=5)) == ErrorCode.NONE
    assert leader_and_isr(order(controller_epoch=5, leader_epoch=4)) == ErrorCode.NONE  # the same epoch: no entry
    assert leader_and_isr(order(controller_epoch=4, leader_epoch=5)) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert stop_replica(order(controller_epoch=4)) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert stop_replica(order(controller_epoch=6)) == ErrorCode.NONE
    assert leader_and_isr(order(controller_epoch=5, leader_epoch=6)) == ErrorCode.STALE_CONTROLLER_EPOCH
    if lai >= 2:  # LeaderAndIsr carries the broker epoch from v2 (KIP-380): checked before the controller's
        assert leader_and_isr(order(controller_epoch=7, broker_epoch=99)) == ErrorCode.STALE_BROKER_EPOCH
    broker.ctx.recorder.writer.close()  # type: ignore[union-attr]

    entries = [e for e in read_journal(tmp_path / "journal.jsonl") if not isinstance(e, StateObserved)]
    seen = [
        (e.api, e.controller_epoch, e.previous_controller_epoch) for e in entries if isinstance(e, ControllerEpochSeen)
    ]
    assert seen == [("LeaderAndIsr", 5, 0), ("StopReplica", 6, 5)]
    refused = [
        (e.api, e.api_version, e.controller_epoch, e.newest_controller_epoch, e.error)
        for e in entries
        if isinstance(e, ControlRefused)
    ]
    stale = ErrorCode.STALE_CONTROLLER_EPOCH
    expected = [
        ("LeaderAndIsr", lai, 4, 5, stale),
        ("StopReplica", stop, 4, 5, stale),
        ("LeaderAndIsr", lai, 5, 6, stale),
    ]
    if lai >= 2:
        expected.append(("LeaderAndIsr", lai, 7, 6, ErrorCode.STALE_BROKER_EPOCH))
    assert refused == expected
    assert {(e.broker, e.broker_epoch) for e in entries if hasattr(e, "broker_epoch")} == {(BROKER_ID, 100)}
    assert [e.request_broker_epoch for e in entries if isinstance(e, ControlRefused)][-1] == (99 if lai >= 2 else -1)
    assert broker.listener is not None and broker.listener.controller_epoch == 6  # no refusal moved it


async def test_a_new_incarnation_starts_from_no_controller_epoch(tmp_path: Path) -> None:
    broker = runner(tmp_path / "journal.jsonl")
    broker.new_listener()
    lai = listener_max_versions(SEED, BROKER_ID)[ApiKey.LEADER_AND_ISR]
    assert send(broker, leader_and_isr_request(order(controller_epoch=9), lai), lai) == ErrorCode.NONE
    broker.new_listener()  # a bounce: Kafka's broker keeps its controller epoch in memory only
    assert send(broker, leader_and_isr_request(order(controller_epoch=8), lai), lai) == ErrorCode.NONE
    broker.ctx.recorder.writer.close()  # type: ignore[union-attr]
    seen = [e for e in read_journal(tmp_path / "journal.jsonl") if isinstance(e, ControllerEpochSeen)]
    assert [(e.controller_epoch, e.previous_controller_epoch) for e in seen] == [(9, 0), (8, 0)]


@pytest.mark.parametrize("seed", [0, 7])  # broker 1's listener: LeaderAndIsr v5 and StopReplica v3; v4 and v0
async def test_stop_partitions_and_full_or_first_leader_and_isr_are_journalled(tmp_path: Path, seed: int) -> None:
    """The brokers' side of the control duties: each StopReplica partition decided (with its
    leader epoch, delete flag and answer), each FULL LeaderAndIsr accepted and an incarnation's first
    of each controller epoch; nothing of a request refused whole."""
    broker = runner(tmp_path / "journal.jsonl", seed)
    broker.new_listener()
    versions = listener_max_versions(seed, BROKER_ID)
    lai, stop = versions[ApiKey.LEADER_AND_ISR], versions[ApiKey.STOP_REPLICA]
    incremental = order(controller_epoch=5)
    full = ControlOrder(BROKER_ID, 100, 3000, 5, incremental.partitions, (), True)
    for the_order in (incremental, incremental, full, full):
        assert send(broker, leader_and_isr_request(the_order, lai), lai) == ErrorCode.NONE
    deleting = ControlOrder(BROKER_ID, 100, 3000, 5, stops=(StopPartition("foo", TOPIC_ID, 0, -2, True),))
    assert send(broker, stop_replica_requests(deleting, stop)[0], stop) == ErrorCode.NONE
    assert send(broker, stop_replica_requests(order(controller_epoch=4), stop)[0], stop) != ErrorCode.NONE
    broker.ctx.recorder.writer.close()  # type: ignore[union-attr]

    entries = list(read_journal(tmp_path / "journal.jsonl"))
    accepted = [(e.controller_epoch, e.request_type) for e in entries if isinstance(e, LeaderAndIsrObserved)]
    # v0-4 carry no type: a full order is one more LeaderAndIsr of the epoch there, not journalled again
    assert accepted == ([(5, 1), (5, 2), (5, 2)] if lai >= 5 else [(5, 0)])
    stops = [(e.topic, e.partition, e.leader_epoch, e.delete, e.error) for e in entries if isinstance(e, StopObserved)]
    assert stops == [("foo", 0, -2 if stop >= 3 else -1, True, ErrorCode.NONE)]


@pytest.mark.parametrize(("seed", "version"), [(0, 5), (3, 6)])  # listeners of LeaderAndIsr up to v5, v7
async def test_a_recovery_state_is_known_only_from_a_leader_and_isr_that_carries_it(
    tmp_path: Path, seed: int, version: int
) -> None:
    broker = runner(tmp_path / "journal.jsonl", seed)
    broker.new_listener()
    assert send(broker, leader_and_isr_request(order(controller_epoch=5), version), version) == ErrorCode.NONE
    assert broker.listener is not None
    view = broker.listener.partitions[("foo", 0)]
    # before v6 the field is absent: taken as RECOVERED (as a broker of that version does), never as said
    assert (view.leader_recovery_state, view.recovery_known) == (0, version >= 6)
