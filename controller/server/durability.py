"""The writer's commit quorum: where the writer's batches go into the log, and when they are
committed.

A sole voter's log commits what it fsyncs (`SoleVoter`); a Raft quorum's commits what a majority
holds, once the leader's lease holds (`controller.server.quorum.Quorum`), and its Raft driver
writes the batches, as it writes everything else the log takes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from ..engine import Commit
from ..runtime import in_thread_now


class Durability(Protocol):
    """When appended records are committed: the commit quorum (`SoleVoter`, or the Raft quorum)."""

    async def write(self, commit: Commit, write: Callable[[Commit], int]) -> bool:
        """Write the commit's batches to the local log with `write` (the engine's: one write and
        one fsync, in a worker thread), in their place in the log: True once they are on disk
        (committed or not); False, writing nothing, if they never may be (this node no longer
        leads the epoch they were decided in). A failed write raises (`LogError`)."""
        ...

    async def committed(self, end_offset: int) -> bool:
        """Wait until every record below `end_offset` (already in the local log) is committed:
        True; or False once it never will be under this node's leadership."""
        ...

    @property
    def leader_id(self) -> int | None:
        """The active controller as far as this node knows (for NOT_CONTROLLER answers)."""
        ...

    @property
    def high_watermark(self) -> int | None:
        """The committed end of the log (None: whatever the local log holds is committed)."""
        ...

    def snapshot_created(self, end_offset: int, epoch: int) -> None:
        """A snapshot of the committed state up to `end_offset` was written."""
        ...


class SoleVoter:
    """A quorum of one, for the writer on its own (tests, tools): what this node's log holds
    (written and fsync'd) is committed. The daemon's sole voter is a `Quorum` of one voter."""

    def __init__(self, node_id: int) -> None:
        self.leader_id: int | None = node_id
        self.high_watermark: int | None = None

    async def write(self, commit: Commit, write: Callable[[Commit], int]) -> bool:
        return await write_here(commit, write)

    async def committed(self, end_offset: int) -> bool:
        return True

    def snapshot_created(self, end_offset: int, epoch: int) -> None:
        pass


async def write_here(commit: Commit, write: Callable[[Commit], int]) -> bool:
    """`write(commit)` in a worker thread that starts at once (the writer's task waits for it)."""
    await in_thread_now(write, commit)
    return True
