"""What a broker's control listener believes about one partition (pure data, shared by the listener
and the model: the listener writes views from LeaderAndIsr and StopReplica, the model reads them as
its only source of truth for what the broker leads and hosts)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PartitionView:
    """What the broker believes about one partition."""

    topic_name: str
    topic_id: uuid.UUID
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    partition_epoch: int
    replicas: tuple[int, ...]
    leader_recovery_state: int = 0
    #: whether the controller said the recovery state (LeaderAndIsr v6+); before v6 it is taken as
    #: RECOVERED, as a broker of that version does, but it may not be
    recovery_known: bool = True
    stopped: bool = False
    deleted: bool = False

    @property
    def epochs(self) -> tuple[int, int]:
        """(leader epoch, partition epoch): a newer state of the partition compares greater."""
        return (self.leader_epoch, self.partition_epoch)

    @property
    def hosted(self) -> bool:
        """The broker serves this replica (neither stopped nor deleted)."""
        return not (self.stopped or self.deleted)
