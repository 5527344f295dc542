"""One partition of one topic, for the tests of partition state and partition changes."""

from __future__ import annotations

import uuid

from controller.state.model import PartitionRegistration, TopicPartition
from protocol.records.metadata import LOST_DIRECTORY, UNASSIGNED_DIRECTORY, PartitionChangeRecord

TOPIC = uuid.UUID(int=7)
TP = TopicPartition(TOPIC, 0)
U, LOST = UNASSIGNED_DIRECTORY, LOST_DIRECTORY
PART = PartitionRegistration(
    replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=0, partition_epoch=0, directories=(U, U, U)
)


def change(**fields: object) -> PartitionChangeRecord:
    """A PartitionChangeRecord of the partition with the given fields (the rest at their defaults)."""
    return PartitionChangeRecord(partition_id=0, topic_id=TOPIC, **fields)  # type: ignore[arg-type]
