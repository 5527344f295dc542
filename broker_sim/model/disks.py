"""A broker's log dirs: which replica lives where, which dirs failed, and the replica state changes
(AlterReplicaState, KIP-589) waiting to be reported.

Rules: a broker has `LOG_DIRS` dirs with ids from its rng; a replica's dir is fixed by its topic and
partition (crc32), so every incarnation places it the same way. A failed dir takes its hosted
replicas OFFLINE (reported once), its repair brings the same replicas ONLINE, and they are caught
up again `catch_up_s` later. A new incarnation starts with every dir healthy (the controller brings
its replicas online at registration).
"""

from __future__ import annotations

import uuid
import zlib
from collections.abc import Callable, Iterable

from protocol.messages.alter_replica_state import OFFLINE, ONLINE

from .views import PartitionView

LOG_DIRS = 2
Replica = tuple[str, uuid.UUID, int]  # (topic name, topic id or ZERO_UUID, partition)


def dir_of(topic: str, partition: int) -> int:
    return zlib.crc32(f"{topic}:{partition}".encode()) % LOG_DIRS


class Disks:
    def __init__(self, log_dirs: tuple[uuid.UUID, ...], catch_up_s: float) -> None:
        self.log_dirs = log_dirs
        self.catch_up_s = catch_up_s
        self.failed: dict[int, tuple[Replica, ...]] = {}
        self.pending: list[tuple[int, tuple[Replica, ...]]] = []  # (new state, replicas), oldest first
        self.retry_at = 0.0
        self.sent_at = 0.0  # when the report in flight (the oldest pending) was sent
        self.ready_at: dict[tuple[str, int], float] = {}

    def reset(self) -> None:
        self.failed.clear()
        self.pending.clear()
        self.ready_at.clear()
        self.retry_at = 0.0

    @property
    def offline_dir_ids(self) -> tuple[uuid.UUID, ...]:
        return tuple(self.log_dirs[index] for index in sorted(self.failed))

    def healthy(self, topic: str, partition: int, t: float) -> bool:
        if self.ready_at and t < self.ready_at.get((topic, partition), 0.0):
            return False
        return not self.failed or dir_of(topic, partition) not in self.failed

    def offline(self, topic: str, partition: int) -> bool:
        """The replica's log dir has failed (and is not repaired yet)."""
        return bool(self.failed) and dir_of(topic, partition) in self.failed

    def fail(self, index: int, views: Iterable[PartitionView], topic_id: Callable[[PartitionView], uuid.UUID]) -> None:
        if index in self.failed:
            return
        replicas = tuple(
            (view.topic_name, topic_id(view), view.partition)
            for view in views
            if view.hosted and dir_of(view.topic_name, view.partition) == index
        )
        self.failed[index] = replicas
        if replicas:
            self.pending.append((OFFLINE, replicas))

    def repair(self, index: int, t: float) -> None:
        replicas = self.failed.pop(index, None)
        if not replicas:
            return
        for topic, _, partition in replicas:
            self.ready_at[(topic, partition)] = t + self.catch_up_s
        self.pending.append((ONLINE, replicas))

    def reported(self) -> None:
        """The oldest pending change was answered (applied or refused for good)."""
        if self.pending:
            self.pending.pop(0)
