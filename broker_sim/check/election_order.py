"""Which replica a moved leadership goes to (semantics.md: "A new leader is the first replica, in
assignment order, that is in the new ISR and eligible"), in the log.

Rules (ids in violations.RULES):
- `leader-order`: a PartitionChangeRecord that names a leader (not -1, not "unchanged") other than
  the partition's leader before it is an election; at the end of its batch (for a KIP-868
  transaction, of its End), if the partition is still led by that broker and the broker is
  eligible (registered, unfenced, not shutting down, its replica online), no replica before it in
  assignment order may be in the ISR and eligible then.
- Every kind of election agrees with this, so none is excused: fencing, an offline replica and a
  controlled shutdown move leadership to the first eligible ISR member; a preferred election makes
  replicas[0] leader (the first); an unclean one makes the ISR [leader]; a broker unfenced or a
  replica online elected where the partition was leaderless is the only eligible ISR member.
- A leader the log makes ineligible at the batch's end is `leader-eligibility`'s to judge, not
  this rule's; a partition created is not an election (the log's rules judge its first state).
- Cost: one int per partition (its last leader), and a look at one replica list per election.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protocol.records.metadata import NO_LEADER, NO_LEADER_CHANGE, PartitionChangeRecord, PartitionRecord
from protocol.spec import Data

from .events import RecordHandler, SnapshotRecords, Subscriber
from .log import Batch, SnapshotFile
from .rules import LogRules
from .state import Partition
from .violations import Violation

Key = tuple[int, int]  # (topic id int, partition)


class ElectionOrder(Subscriber):
    """Judges each election's choice at the end of its batch (see the module rules)."""

    name = "election-order"

    def __init__(self, image: LogRules) -> None:
        super().__init__()
        self.image = image
        self.leaders: dict[Key, int] = {}
        self.elected: dict[Key, int] = {}  # partitions elected in the batch -> offset of the record

    def record_handlers(self) -> Mapping[type, RecordHandler]:
        return {PartitionRecord: self.partition, PartitionChangeRecord: self.change}

    def on_base_snapshot(self, snapshot: SnapshotFile, records: SnapshotRecords) -> None:
        for topic in self.image.model.topics.values():
            for index, partition in topic.partitions.items():
                self.leaders[(topic.topic_id.int, index)] = partition.leader

    def partition(self, offset: int, record: Data) -> None:
        assert isinstance(record, PartitionRecord)
        self.leaders[(record.topic_id.int, record.partition_id)] = record.leader

    def change(self, offset: int, record: Data) -> None:
        assert isinstance(record, PartitionChangeRecord)
        if record.leader == NO_LEADER_CHANGE:
            return
        key = (record.topic_id.int, record.partition_id)
        before = self.leaders.get(key)
        self.leaders[key] = record.leader
        if record.leader != NO_LEADER and before is not None and before != record.leader:
            self.elected[key] = offset

    def on_batch_end(self, batch: Batch, changed: Sequence[Partition]) -> None:
        if not self.elected:
            return
        elected, self.elected = self.elected, {}
        model = self.image.model
        for (topic_id, index), offset in elected.items():
            topic = model.topics.get(topic_id)
            partition = topic.partitions.get(index) if topic is not None else None
            if partition is None or partition.leader != self.leaders.get((topic_id, index)):
                continue

            def eligible(replica: int, partition: Partition = partition) -> bool:
                return model.is_active(replica) and replica not in partition.offline

            leader = partition.leader
            if not eligible(leader):
                continue
            isr = set(partition.isr)
            first = next((r for r in partition.replicas if r in isr and eligible(r)), leader)
            if first != leader:
                self.sink.add(
                    Violation(
                        "leader-order",
                        f"broker {leader} was elected leader although replica {first}, before it in the "
                        f"assignment {list(partition.replicas)}, was in the ISR {list(partition.isr)} and eligible",
                        offset,
                        partition=partition.label,
                        broker=leader,
                    )
                )
