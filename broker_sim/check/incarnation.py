"""A new incarnation starts with no offline replicas (semantics.md, registration: "A new incarnation
... starts fenced, with InControlledShutdown cleared and no offline replicas"), in the log.

Rules (ids in violations.RULES):
- `incarnation-offline`: when a RegisterBrokerRecord takes effect for a broker id with another
  incarnation id than its previous registration (or its first), then at the end of that batch
  (for a KIP-868 transaction, the batch of its End, where the replay applies its records) no
  partition has that broker among its offline replicas (a replica on a lost directory). The same
  incarnation registering again is not judged (it keeps its state).
- The batch is the unit because a controller writes the registration and the partition changes
  that bring its replicas online together: fencer in the registration's batch, or a transaction
  when they take several (controller/ops/brokers.py `register`), Kafka in the registration's
  ControllerResult. A controller that brings them online only in later batches is reported.
- Cost: a look at every partition per new incarnation (registrations are rare); nothing else.
- A base snapshot's registrations are the previous ones of the brokers it holds.
- Judged in fleet runs only (a journal with a RunStarted), never on a log alone: clearing a new
  incarnation's offline replicas is fencer's rule (semantics.md: it tracks offline replicas per
  partition, reported by AlterReplicaState); Kafka's KRaft controller tracks them per log
  directory, and a new incarnation whose directory is still missing keeps them offline, so a
  data dir Kafka wrote is not held to it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from broker_sim.journal import Entry, RunStarted
from protocol.records.metadata import RegisterBrokerRecord
from protocol.spec import Data

from .events import RecordHandler, SnapshotRecords, Subscriber
from .log import Batch, SnapshotFile
from .rules import LogRules
from .state import Partition
from .violations import Violation


class IncarnationRules(Subscriber):
    """Judges each new incarnation's replicas at the end of its registration's batch."""

    name = "incarnation"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.incarnations: dict[int, uuid.UUID] = {}  # broker id -> its last registration's incarnation
        self.new: list[tuple[int, int]] = []  # (broker id, registration offset) to judge at the batch's end
        self.fleet_run = False  # a journal with a RunStarted: fencer's rule applies (module rules)

    def record_handlers(self) -> Mapping[type, RecordHandler]:
        return {RegisterBrokerRecord: self.register}

    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        for broker in self.image.model.brokers.values():
            self.incarnations[broker.broker_id] = broker.incarnation

    def on_journal_entry(self, entry: Entry) -> None:
        if isinstance(entry, RunStarted):
            self.fleet_run = True

    def register(self, offset: int, record: Data) -> None:
        assert isinstance(record, RegisterBrokerRecord)
        if self.incarnations.get(record.broker_id) != record.incarnation_id and self.fleet_run:
            self.new.append((record.broker_id, offset))
        self.incarnations[record.broker_id] = record.incarnation_id

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        if not self.new:
            return
        new, self.new = self.new, []
        for broker_id, offset in new:
            model = self.image.model
            broker = model.brokers.get(broker_id)
            for topic in model.topics.values():
                for partition in topic.partitions.values():
                    if broker_id in partition.offline:
                        self.sink.add(
                            Violation(
                                "incarnation-offline",
                                f"broker {broker_id}'s new incarnation (broker epoch "
                                f"{broker.epoch if broker is not None else '?'}, registered at offset {offset}) "
                                f"still has its replica offline at the end of its registration's batch "
                                f"(offset {batch.base_offset})",
                                offset,
                                partition=partition.label,
                                broker=broker_id,
                            )
                        )
