"""Operations over many partitions, decided and written in bounded steps.

Rules:
- Broker-driven operations (fencing, controlled shutdown, registration, unfencing,
  AlterPartition, AlterReplicaState) may touch every partition a broker hosts, and they must
  not fail for being large: they are decided at most `step_size` partitions at a time, and each
  step's records are one atomic batch of at most `max_records_per_operation` records (as Kafka
  splits a non-atomic ControllerResult into batches). The request is answered once every batch
  is durable.
- Each step is decided after the previous one was replayed: it sees its effects.
- A step decides at most `STEP_PARTITIONS` partitions (about 10-20 ms here), so the shell can
  let other work run between steps; an operation over fewer partitions is a single batch,
  exactly what it was before it was split.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from protocol.records.metadata import PartitionChangeRecord
from protocol.spec import Data

from ..state.controller_state import ControllerState, RecordAndVersion, Steps
from ..state.model import PartitionRegistration, TopicPartition
from ..state.replication import change_version

STEP_PARTITIONS = 2000
T = TypeVar("T")

Decide = Callable[[TopicPartition, PartitionRegistration], PartitionChangeRecord | None]


def step_size(state: ControllerState) -> int:
    """Partitions decided per step, and records per batch: never above the operation limit."""
    return max(1, min(STEP_PARTITIONS, state.config.max_records_per_operation))


def batches(
    state: ControllerState,
    items: Iterable[T],
    decide: Callable[[T], PartitionChangeRecord | None],
    *,
    first: Sequence[RecordAndVersion] = (),
    last: Sequence[RecordAndVersion] = (),
) -> Iterator[list[RecordAndVersion]]:
    """Batches of `first`, then the change `decide(item)` gives for each item (None: no change),
    then `last`.

    A step decides at most `step_size` items, so a batch holds at most that many records (an
    item gives at most one); `first` opens the first batch and `last` closes the final one when
    they fit. Every batch is yielded (even an empty one) before the items after it are decided."""
    size = step_size(state)
    batch = list(first)
    decided = len(batch)  # items decided (or records placed) in this step
    for item in items:
        if decided >= size:
            yield batch
            batch, decided = [], 0
        decided += 1
        change = decide(item)
        if change is not None:
            batch.append((change, change_version(change)))
    if batch and len(batch) + len(last) > size:
        yield batch
        batch = []
    yield [*batch, *last]


def partition_batches(
    state: ControllerState,
    tps: Sequence[TopicPartition],
    decide: Decide,
    *,
    first: Sequence[RecordAndVersion] = (),
    last: Sequence[RecordAndVersion] = (),
) -> Iterator[list[RecordAndVersion]]:
    """`batches` over partitions: `decide(tp, partition)` for each of `tps` that still exists."""

    def decide_present(tp: TopicPartition) -> PartitionChangeRecord | None:
        part = state.replication.partition(tp)
        return None if part is None else decide(tp, part)

    return batches(state, tps, decide_present, first=first, last=last)


def answered_after(response: Data | None, batches: Iterator[list[RecordAndVersion]]) -> Steps:
    """Steps that write `batches` in order and answer `response` (decided beforehand)."""
    yield from batches
    return response
