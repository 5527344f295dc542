"""A test harness around ControllerCore: an in-memory log, a clock, and helpers for common steps.

It does what the daemon's engine and writer do (decide, replay each batch before the next is
decided, collect the control orders), with a list standing in for the fsync'd log: a batch goes
into the list as it is replayed (the daemon appends it later, before it answers), so that core
tests read like scenarios.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from controller.auth.authorizer import AuthorizerConfig
from controller.control.orders import ControlOrder
from controller.core import ControllerCore, batches
from controller.ops.authorization import DEFAULT_CONTEXT, RequestContext
from controller.state.controller_state import ControllerConfig, Outcome
from controller.state.model import PartitionRegistration
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
)
from protocol.messages.alter_replica_state import (
    AlterReplicaStateRequest,
    AlterReplicaStateRequestTopicReplicas,
    AlterReplicaStateResponse,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from protocol.messages.broker_registration import (
    BrokerRegistrationRequest,
    BrokerRegistrationRequestListener,
    BrokerRegistrationResponse,
)
from protocol.messages.controlled_shutdown import ControlledShutdownRequest, ControlledShutdownResponse
from protocol.messages.create_topics import (
    CreateTopicsRequest,
    CreateTopicsRequestCreatableReplicaAssignment,
    CreateTopicsRequestCreatableTopic,
    CreateTopicsResponse,
)
from protocol.records.transactions import MARKERS
from protocol.spec import Data

CLUSTER_ID = "fencer-test-cluster-0"


def incarnation(broker_id: int, generation: int = 0) -> uuid.UUID:
    return uuid.UUID(int=(broker_id << 32) | (generation + 1))


@dataclass
class Harness:
    session_timeout_ms: int = 9000
    seed: int = 0
    max_records_per_operation: int = ControllerConfig.max_records_per_operation
    #: the authorizer's configuration (None: no authorizer, as the daemon by default)
    authorizer: AuthorizerConfig | None = None
    core: ControllerCore = field(init=False)
    log: list[tuple[Data, int, int]] = field(default_factory=list)  # (record, version, offset)
    orders: list[ControlOrder] = field(default_factory=list)
    batches: list[list[Data]] = field(default_factory=list)  # every committed batch, in order
    now_ns: int = 1_000_000_000

    def __post_init__(self) -> None:
        config = ControllerConfig(
            cluster_id=CLUSTER_ID,
            node_id=3000,
            session_timeout_ms=self.session_timeout_ms,
            max_records_per_operation=self.max_records_per_operation,
            authorizer=self.authorizer,
        )
        self.core = ControllerCore(config, random.Random(self.seed))

    # ------------------------------------------------------------------ plumbing
    @property
    def next_offset(self) -> int:
        return len(self.log)

    def send(self, body: Data, version: int, context: RequestContext = DEFAULT_CONTEXT) -> tuple[Any, list[Data]]:
        """Decide a request from `context`, committing each of its batches in turn; (response, every
        data record: the BeginTransactionRecord and EndTransactionRecord framing a split operation
        are in `batches` and the log only)."""
        records: list[Data] = []
        outcome = self.core.handle(body.API.key, version, body, self.now_ns, self.next_offset, context)
        response = self.run(outcome, records)
        return response, records

    def run(self, outcome: Outcome, records: list[Data] | None = None) -> Data | None:
        """Commit an operation's batches one by one (as the daemon does); its response.

        Each batch is also kept in `self.batches`, so tests can see how an operation was split."""
        steps = batches(outcome)
        while True:
            try:
                batch = next(steps)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            if batch:
                self.batches.append([record for record, _ in batch])
                self.commit(list(batch))
            if records is not None:  # the operation's data: a split one's transaction markers are framing
                records.extend(record for record, _ in batch if not isinstance(record, MARKERS))

    def commit(self, records: list[tuple[Data, int]]) -> None:
        base = self.next_offset
        placed = [(record, base + i) for i, (record, _) in enumerate(records)]
        self.log.extend((record, version, base + i) for i, (record, version) in enumerate(records))
        self.orders.extend(self.core.apply(placed))

    def advance(self, ms: int, expire: bool = True) -> list[list[Data]]:
        """Move the clock; fence every broker whose session expired (unless `expire` is false, as if
        the controller's timer had not fired yet). Returns each fencing's records."""
        self.now_ns += ms * 1_000_000
        fenced: list[list[Data]] = []
        if not expire:
            return fenced
        while (outcome := self.core.expire_sessions(self.now_ns)) is not None:
            records: list[Data] = []
            self.run(outcome, records)
            fenced.append(records)
        return fenced

    def take_orders(self) -> list[ControlOrder]:
        """The control orders collected since the last call."""
        taken, self.orders = self.orders, []
        return taken

    def replayed(self) -> ControllerCore:
        """A fresh core rebuilt from the log alone."""
        fresh = ControllerCore(self.core.config, random.Random(self.seed))
        for record, _, offset in self.log:
            fresh.replay(record, offset)
        return fresh

    # ------------------------------------------------------------------ steps
    @staticmethod
    def registration(
        broker_id: int, generation: int = 0, rack: str | None = None, port: int | None = None
    ) -> BrokerRegistrationRequest:
        listener = BrokerRegistrationRequestListener(
            name="PLAINTEXT", host="localhost", port=9000 + broker_id if port is None else port
        )
        return BrokerRegistrationRequest(
            broker_id=broker_id,
            cluster_id=CLUSTER_ID,
            incarnation_id=incarnation(broker_id, generation),
            listeners=(listener,),
            rack=rack,
        )

    def register(self, broker_id: int, generation: int = 0, rack: str | None = None, version: int = 3) -> int:
        response, _ = self.send(self.registration(broker_id, generation, rack), version)
        assert isinstance(response, BrokerRegistrationResponse)
        assert response.error_code == 0, response
        return response.broker_epoch

    def epoch(self, broker_id: int) -> int:
        broker = self.core.state.cluster.get(broker_id)
        assert broker is not None
        return broker.epoch

    def heartbeat(self, broker_id: int, **fields: Any) -> BrokerHeartbeatResponse:
        fields.setdefault("broker_epoch", self.epoch(broker_id))
        fields.setdefault("current_metadata_offset", self.next_offset)
        response, _ = self.send(BrokerHeartbeatRequest(broker_id=broker_id, **fields), 1)
        assert isinstance(response, BrokerHeartbeatResponse)
        return response

    def start_brokers(self, *broker_ids: int, racks: dict[int, str] | None = None) -> None:
        for broker_id in broker_ids:
            self.register(broker_id, rack=(racks or {}).get(broker_id))
        for broker_id in broker_ids:
            assert not self.heartbeat(broker_id).is_fenced

    def create_topic(
        self, name: str, partitions: int = 1, replication_factor: int = 3, assignments: list[list[int]] | None = None
    ) -> uuid.UUID:
        if assignments is not None:
            topic = CreateTopicsRequestCreatableTopic(
                name=name,
                num_partitions=-1,
                replication_factor=-1,
                assignments=tuple(
                    CreateTopicsRequestCreatableReplicaAssignment(partition_index=i, broker_ids=tuple(a))
                    for i, a in enumerate(assignments)
                ),
            )
        else:
            topic = CreateTopicsRequestCreatableTopic(
                name=name, num_partitions=partitions, replication_factor=replication_factor
            )
        response, _ = self.send(CreateTopicsRequest(topics=(topic,)), 7)
        assert isinstance(response, CreateTopicsResponse)
        assert response.topics[0].error_code == 0, response
        return response.topics[0].topic_id

    def topic_id(self, name: str) -> uuid.UUID:
        topic = self.core.state.replication.topic_by_name(name)
        assert topic is not None
        return topic.topic_id

    def partition(self, name: str, index: int = 0) -> PartitionRegistration:
        topic = self.core.state.replication.topic_by_name(name)
        assert topic is not None
        return topic.partitions[index]

    @staticmethod
    def isr_data(
        version: int,
        index: int,
        isr: list[int],
        leader_epoch: int,
        partition_epoch: int,
        recovery: int = 0,
        member_epochs: dict[int, int] | None = None,
    ) -> AlterPartitionRequestPartitionData:
        """One partition of an AlterPartition request, shaped for `version` (NewIsr or NewIsrWithEpochs)."""
        with_epochs = tuple(
            AlterPartitionRequestBrokerState(broker_id=b, broker_epoch=(member_epochs or {}).get(b, -1)) for b in isr
        )
        return AlterPartitionRequestPartitionData(
            partition_index=index,
            leader_epoch=leader_epoch,
            new_isr=tuple(isr) if version < 3 else (),
            new_isr_with_epochs=with_epochs if version >= 3 else (),
            leader_recovery_state=recovery if version >= 1 else 0,
            partition_epoch=partition_epoch,
        )

    def alter_isr(
        self,
        name: str,
        index: int,
        isr: list[int],
        *,
        version: int = 2,
        broker_id: int | None = None,
        broker_epoch: int | None = None,
        leader_epoch: int | None = None,
        partition_epoch: int | None = None,
        recovery: int = 0,
        member_epochs: dict[int, int] | None = None,
    ) -> tuple[AlterPartitionResponse, list[Data]]:
        part = self.partition(name, index)
        sender = part.leader if broker_id is None else broker_id
        part_request = self.isr_data(
            version,
            index,
            isr,
            leader_epoch=part.leader_epoch if leader_epoch is None else leader_epoch,
            partition_epoch=part.partition_epoch if partition_epoch is None else partition_epoch,
            recovery=recovery,
            member_epochs=member_epochs,
        )
        topic = AlterPartitionRequestTopicData(
            topic_name=name if version < 2 else "",
            topic_id=self.topic_id(name) if version >= 2 else uuid.UUID(int=0),
            partitions=(part_request,),
        )
        request = AlterPartitionRequest(
            broker_id=sender,
            broker_epoch=self.epoch(sender) if broker_epoch is None else broker_epoch,
            topics=(topic,),
        )
        response, records = self.send(request, version)
        assert isinstance(response, AlterPartitionResponse)
        return response, records

    def controlled_shutdown(
        self, broker_id: int, version: int = 3, broker_epoch: int | None = None
    ) -> tuple[ControlledShutdownResponse, list[Data]]:
        """ControlledShutdown; from v2 it carries the registered epoch unless `broker_epoch` is given."""
        if broker_epoch is None:
            broker = self.core.state.cluster.get(broker_id)
            broker_epoch = broker.epoch if broker is not None and version >= 2 else -1
        response, records = self.send(
            ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch), version
        )
        assert isinstance(response, ControlledShutdownResponse)
        return response, records

    def alter_replica_state(
        self,
        broker_id: int,
        name: str,
        partitions: list[int],
        new_state: int,
        *,
        version: int = 0,
        broker_epoch: int | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> tuple[AlterReplicaStateResponse, list[Data]]:
        """AlterReplicaState for one topic, named (v0) or by id (v1, looked up unless `topic_id` is given)."""
        if version >= 1 and topic_id is None:
            topic_id = self.topic_id(name)
        topic = AlterReplicaStateRequestTopicReplicas(
            name=name if version == 0 else "",
            topic_id=topic_id if version >= 1 and topic_id is not None else uuid.UUID(int=0),
            partitions=tuple(partitions),
        )
        request = AlterReplicaStateRequest(
            broker_id=broker_id,
            broker_epoch=self.epoch(broker_id) if broker_epoch is None else broker_epoch,
            new_state=new_state,
            topics=(topic,),
        )
        response, records = self.send(request, version)
        assert isinstance(response, AlterReplicaStateResponse)
        return response, records
