"""The writer's commit quorum: when records the writer appended to the local log are committed.

A sole voter's log commits what it fsyncs (`SoleVoter`); a Raft quorum's commits what a majority
holds, once the leader's lease holds (`controller.server.quorum.Quorum`)."""

from __future__ import annotations

from typing import Protocol


class Durability(Protocol):
    """When appended records are committed: the commit quorum (`SoleVoter`, or the Raft quorum)."""

    def appending(self, end_offset: int, records: int) -> bool:
        """`records` records ending at `end_offset` are about to be appended to the local log:
        False if they never may be (this node no longer leads the epoch they were decided in)."""
        ...

    def written(self, end_offset: int) -> None:
        """Every record below `end_offset` is in the local log and fsync'd (committed or not)."""
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
    """A quorum of one: what this node's log holds (written and fsync'd) is committed."""

    def __init__(self, node_id: int) -> None:
        self.leader_id: int | None = node_id
        self.high_watermark: int | None = None

    def appending(self, end_offset: int, records: int) -> bool:
        return True

    def written(self, end_offset: int) -> None:
        pass

    async def committed(self, end_offset: int) -> bool:
        return True

    def snapshot_created(self, end_offset: int, epoch: int) -> None:
        pass
