"""What the Raft core's ints are: node ids, epochs, and (offset, epoch) pairs.

Rules:
- `NodeId` and `Epoch` are `NewType`s (free at run time, checked by mypy), as `protocol.ids`
  types the broker-side ids; offsets stay plain ints (a log position is only ever an offset).
- `OffsetAndEpoch` is Kafka's `OffsetAndEpoch`: a log's end (end offset, epoch of its last
  batch), a snapshot id (end offset, epoch of the last batch it holds) or a diverging epoch (an
  epoch and where it ends). "At least as up to date" compares the epoch first, then the offset
  (Kafka's `OffsetAndEpoch.compareTo`, used by the Vote check).
- The wire's "no leader" (-1) is `None` here; the shell maps one to the other.
- `MAX_EPOCH` is the largest epoch a node enters: one below the wire's int32 maximum, so that a
  node in any epoch it holds can still write it (batches, quorum-state) and the epochs of a
  quorum run out only after 2,147,483,646 elections. A request naming a larger epoch is refused,
  an answer naming one ignored, and a node in `MAX_EPOCH` never stands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NewType

#: A controller's `node.id`: a voter's or an observer's.
NodeId = NewType("NodeId", int)
#: A Raft epoch (KRaft's leader epoch, the controller epoch): up by one at every election.
Epoch = NewType("Epoch", int)
#: the largest epoch a node ever enters (see the rules)
MAX_EPOCH = Epoch(2**31 - 2)


@dataclass(frozen=True, slots=True)
class OffsetAndEpoch:
    offset: int
    epoch: Epoch

    def at_least(self, other: OffsetAndEpoch) -> bool:
        """Whether a log ending here is at least as up to date as one ending at `other`."""
        return (self.epoch, self.offset) >= (other.epoch, other.offset)
