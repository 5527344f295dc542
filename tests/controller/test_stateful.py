"""Random operation sequences against the core, with the cluster's invariants checked after every step.

Steps: registrations (new incarnations and repeats), heartbeats (unfence, WantFence,
WantShutDown), time passing (session fencing), topic creation and deletion, AlterPartition from
leaders and from stale senders (old broker epoch, old leader epoch, old partition epoch, a
follower), controlled shutdown (every version, stale epochs), AlterReplicaState, elections.
After every step:
- replay equivalence: the state rebuilt from the log, and from a snapshot plus the log's tail,
  equals the live state;
- no ISR gained a member that is fenced, shutting down, offline or unregistered;
- every leader is in its ISR, or the partition has no leader (-1);
- leader and partition epochs never decrease; broker epochs strictly increase across incarnations;
- a rejected operation (top-level error) wrote nothing, and no record touches a partition whose
  result was an error.
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from controller.core import ControllerCore
from controller.ops.changes import eligible
from protocol.messages.alter_replica_state import (
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
    AlterReplicaStateResponse,
)
from protocol.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic
from protocol.messages.delete_topics import DeleteTopicsRequest
from protocol.messages.elect_leaders import ElectLeadersRequest
from protocol.records.metadata import NO_LEADER, PartitionChangeRecord
from protocol.spec import Data

from .harness import Harness

BROKERS = st.integers(0, 4)


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(session_timeout_ms=9000)
        self.generation: dict[int, int] = {}
        self.broker_epochs: dict[int, list[int]] = {}
        self.epochs_seen: dict[tuple[uuid.UUID, int], tuple[int, int]] = {}
        self.snapshot: tuple[list[tuple[Data, int]], int, int] | None = None
        self.topic_count = 0
        self.before = self._isrs()

    # ------------------------------------------------------------------ helpers
    def _isrs(self) -> dict[tuple[uuid.UUID, int], tuple[int, ...]]:
        return {(tp.topic_id, tp.partition): part.isr for tp, part in self.h.core.state.replication.partitions()}

    def _topics(self) -> list[str]:
        return sorted(self.h.core.state.replication.names)

    def _send(self, body: Data, version: int) -> tuple[Any, list[Data]]:
        self.before = self._isrs()
        return self.h.send(body, version)

    @initialize(brokers=st.integers(1, 5))
    def start(self, brokers: int) -> None:
        for broker_id in range(brokers):
            self.register(broker_id, new_incarnation=False)
            self.h.heartbeat(broker_id)

    # ------------------------------------------------------------------ rules
    @rule(broker_id=BROKERS, new_incarnation=st.booleans())
    def register(self, broker_id: int, new_incarnation: bool) -> None:
        if new_incarnation or broker_id not in self.generation:
            self.generation[broker_id] = self.generation.get(broker_id, -1) + 1
        self.before = self._isrs()
        before_log = len(self.h.log)
        from protocol.messages.broker_registration import (
            BrokerRegistrationRequest,
            BrokerRegistrationRequestListener,
        )

        from .harness import CLUSTER_ID, incarnation

        response, records = self.h.send(
            BrokerRegistrationRequest(
                broker_id=broker_id,
                cluster_id=CLUSTER_ID,
                incarnation_id=incarnation(broker_id, self.generation[broker_id]),
                listeners=(
                    BrokerRegistrationRequestListener(name="PLAINTEXT", host="localhost", port=9000 + broker_id),
                ),
            ),
            3,
        )
        if response.error_code:
            assert records == [] and len(self.h.log) == before_log
            return
        epochs = self.broker_epochs.setdefault(broker_id, [])
        if not epochs or epochs[-1] != response.broker_epoch:
            assert not epochs or response.broker_epoch > epochs[-1], "broker epochs must strictly increase"
            epochs.append(response.broker_epoch)

    @rule(broker_id=BROKERS, want_fence=st.booleans(), want_shut_down=st.booleans(), behind=st.booleans())
    def heartbeat(self, broker_id: int, want_fence: bool, want_shut_down: bool, behind: bool) -> None:
        broker = self.h.core.state.cluster.get(broker_id)
        if broker is None:
            return
        self.before = self._isrs()
        response = self.h.heartbeat(
            broker_id,
            want_fence=want_fence,
            want_shut_down=want_shut_down,
            current_metadata_offset=-1 if behind else self.h.next_offset,
        )
        assert response.error_code == 0

    @rule(broker_id=BROKERS, epoch_delta=st.sampled_from([-1, 1]))
    def stale_heartbeat(self, broker_id: int, epoch_delta: int) -> None:
        broker = self.h.core.state.cluster.get(broker_id)
        epoch = (broker.epoch if broker else 0) + epoch_delta
        self.before = self._isrs()
        before_log = len(self.h.log)
        response = self.h.heartbeat(broker_id, broker_epoch=epoch) if broker else None
        if response is not None:
            assert response.error_code == 77 and len(self.h.log) == before_log

    @rule(ms=st.integers(0, 12_000))
    def time_passes(self, ms: int) -> None:
        self.before = self._isrs()
        self.h.advance(ms)

    @rule(partitions=st.integers(1, 3), replication_factor=st.integers(1, 3))
    def create_topic(self, partitions: int, replication_factor: int) -> None:
        self.topic_count += 1
        topic = CreateTopicsRequestCreatableTopic(
            name=f"t{self.topic_count}", num_partitions=partitions, replication_factor=replication_factor
        )
        response, records = self._send(CreateTopicsRequest(topics=(topic,)), 7)
        assert (response.topics[0].error_code == 0) == bool(records)

    @rule(data=st.data())
    def delete_topic(self, data: st.DataObject) -> None:
        if not self._topics():
            return
        name = data.draw(st.sampled_from(self._topics()))
        response, records = self._send(DeleteTopicsRequest(topic_names=(name,)), 5)
        assert response.responses[0].error_code == 0 and len(records) == 1

    @rule(data=st.data(), version=st.integers(0, 3))
    def alter_partition_from_leader(self, data: st.DataObject, version: int) -> None:
        target = self._pick_partition(data)
        if target is None:
            return
        name, index, part = target
        if part.leader == NO_LEADER:
            return
        others = [r for r in part.replicas if r != part.leader]
        chosen = data.draw(st.lists(st.sampled_from(others), unique=True) if others else st.just([]))
        self.before = self._isrs()
        response, records = self.h.alter_isr(name, index, [part.leader, *chosen], version=version)
        self._check_alter_response(response, records)

    @rule(data=st.data(), version=st.integers(0, 3), stale=st.sampled_from(["broker", "leader", "partition", "sender"]))
    def alter_partition_stale(self, data: st.DataObject, version: int, stale: str) -> None:
        target = self._pick_partition(data)
        if target is None:
            return
        name, index, part = target
        sender = part.leader if part.leader != NO_LEADER else part.replicas[0]
        if self.h.core.state.cluster.get(sender) is None:
            return
        kwargs: dict[str, int] = {"broker_id": sender}
        if stale == "broker":
            kwargs["broker_epoch"] = self.h.epoch(sender) - 1
        elif stale == "leader":
            kwargs["leader_epoch"] = part.leader_epoch - 1
        elif stale == "partition":
            kwargs["partition_epoch"] = part.partition_epoch - 1
        else:
            followers = [r for r in part.replicas if r != part.leader and self.h.core.state.cluster.get(r)]
            if not followers:
                return
            kwargs["broker_id"] = data.draw(st.sampled_from(followers))
        self.before = self._isrs()
        before_log = len(self.h.log)
        response, records = self.h.alter_isr(name, index, list(part.isr), version=version, **kwargs)
        assert records == [] and len(self.h.log) == before_log, f"a stale {stale} request wrote records"
        code = response.error_code or response.topics[0].partitions[0].error_code
        assert code != 0, f"a stale {stale} request was accepted"

    @rule(broker_id=BROKERS, version=st.integers(0, 3), stale=st.booleans())
    def controlled_shutdown(self, broker_id: int, version: int, stale: bool) -> None:
        broker = self.h.core.state.cluster.get(broker_id)
        epoch = -1 if broker is None else broker.epoch
        if stale and broker is not None:
            epoch = epoch - 1 if epoch > 0 else epoch + 1  # -1 means "no epoch": never use it as the stale one
        before_log = len(self.h.log)
        response, records = self._send(ControlledShutdownRequest(broker_id=broker_id, broker_epoch=epoch), version)
        assert isinstance(response, ControlledShutdownResponse)
        if response.error_code:
            assert records == [] and len(self.h.log) == before_log
        if stale and version >= 2 and broker is not None:
            assert response.error_code == 77

    @rule(data=st.data(), new_state=st.sampled_from([1, 2, 3]), version=st.integers(0, 1), stale=st.booleans())
    def alter_replica_state(self, data: st.DataObject, new_state: int, version: int, stale: bool) -> None:
        target = self._pick_partition(data)
        if target is None:
            return
        name, index, part = target
        broker_id = data.draw(st.sampled_from(part.replicas))
        broker = self.h.core.state.cluster.get(broker_id)
        if broker is None:
            return
        topic = AlterReplicaStateRequestTopicReplicas(
            name=name if version == 0 else "",
            topic_id=self.h.topic_id(name) if version == 1 else uuid.UUID(int=0),
            partitions=(index,),
        )
        request = AlterReplicaStateRequest(
            broker_id=broker_id, broker_epoch=broker.epoch - (1 if stale else 0), new_state=new_state, topics=(topic,)
        )
        response, records = self._send(request, version)
        assert isinstance(response, AlterReplicaStateResponse)
        if response.error_code:
            assert records == []
        if stale or new_state == 3:
            assert response.error_code != 0

    @rule(election_type=st.integers(0, 1))
    def elect_leaders(self, election_type: int) -> None:
        self._send(ElectLeadersRequest(election_type=election_type, topic_partitions=None), 1)

    @rule()
    def take_snapshot(self) -> None:
        self.snapshot = (self.h.core.snapshot_records(), len(self.h.log), self.h.core.state.controller_epoch)

    # ------------------------------------------------------------------ helpers
    def _pick_partition(self, data: st.DataObject) -> tuple[str, int, Any] | None:
        topics = self._topics()
        if not topics:
            return None
        name = data.draw(st.sampled_from(topics))
        index = data.draw(st.sampled_from(sorted(self.h.core.state.replication.topic_by_name(name).partitions)))  # type: ignore[union-attr]
        return name, index, self.h.partition(name, index)

    def _check_alter_response(self, response: Any, records: list[Data]) -> None:
        if response.error_code:
            assert records == []
            return
        failed = {
            (topic.topic_id, p.partition_index) for topic in response.topics for p in topic.partitions if p.error_code
        }
        for record in records:
            assert isinstance(record, PartitionChangeRecord)
            assert (record.topic_id, record.partition_id) not in failed or not failed

    # ------------------------------------------------------------------ invariants
    @invariant()
    def replay_from_log_equals_live(self) -> None:
        assert self.h.replayed().durable_view() == self.h.core.durable_view()

    @invariant()
    def snapshot_plus_tail_equals_live(self) -> None:
        if self.snapshot is None:
            return
        records, log_length, _ = self.snapshot
        fresh = ControllerCore(self.h.core.config)
        for offset, (record, _) in enumerate(records):
            fresh.replay(record, offset)
        for record, _, offset in self.h.log[log_length:]:
            fresh.replay(record, offset)
        assert fresh.durable_view() == self.h.core.durable_view()

    @invariant()
    def leaders_are_in_their_isr(self) -> None:
        for _, part in self.h.core.state.replication.partitions():
            assert part.leader == NO_LEADER or part.leader in part.isr
            assert part.isr, "an ISR is never empty"

    @invariant()
    def no_ineligible_replica_joined_an_isr(self) -> None:
        state = self.h.core.state
        for tp, part in state.replication.partitions():
            joined = set(part.isr) - set(self.before.get((tp.topic_id, tp.partition), ()))
            for broker_id in joined:
                if (tp.topic_id, tp.partition) not in self.before:
                    continue  # a new partition starts with its active replicas
                assert eligible(state, part, broker_id), f"{broker_id} joined the ISR of {tp} while ineligible"

    @invariant()
    def epochs_never_decrease(self) -> None:
        for tp, part in self.h.core.state.replication.partitions():
            key = (tp.topic_id, tp.partition)
            previous = self.epochs_seen.get(key)
            if previous is not None:
                assert part.leader_epoch >= previous[0] and part.partition_epoch >= previous[1]
            self.epochs_seen[key] = (part.leader_epoch, part.partition_epoch)


ControllerMachine.TestCase.settings = settings(
    max_examples=int(__import__("os").environ.get("FENCER_STATEFUL_EXAMPLES", "150")),
    stateful_step_count=50,
    deadline=None,
)
TestControllerStateMachine = ControllerMachine.TestCase
