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

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from protocol.records.metadata import PartitionChangeRecord
from protocol.spec import Data

from ..state.controller_state import ControllerState, RecordAndVersion, Steps
from ..state.model import PartitionRegistration, TopicPartition
from .changes import records_of, versioned

STEP_PARTITIONS = 2000
T = TypeVar("T")

Decide = Callable[[TopicPartition, PartitionRegistration], PartitionChangeRecord | None]


def step_size(state: ControllerState) -> int:
    """Partitions decided per step, and records per batch: never above the operation limit."""
    return max(1, min(STEP_PARTITIONS, state.config.max_records_per_operation))


class TopicRequest(Protocol):
    """A topic entry of a request that names partitions (AlterPartition, AlterReplicaState)."""

    @property
    def partitions(self) -> Sequence[Any]: ...


TopicT = TypeVar("TopicT", bound=TopicRequest)
AnswerT = TypeVar("AnswerT", bound=TopicRequest)
#: Decides some of a request's topics (each with some of its partitions: a piece), in order,
#: given the partitions already decided (a partition named twice is refused the second time);
#: returns the topics' positions in the request, their answers, and the piece's changes.
PieceDecider = Callable[
    [list[tuple[int, TopicT]], set[TopicPartition]], tuple[list[int], list[AnswerT], list[PartitionChangeRecord]]
]


def fits_one_step(state: ControllerState, topics: Sequence[TopicRequest]) -> bool:
    """Do the request's partitions fit one step? (Then it is decided in one plain pass; this runs
    for every AlterPartition, so it avoids even a call to `step_size`.)"""
    limit = state.config.max_records_per_operation
    if limit > STEP_PARTITIONS:
        limit = STEP_PARTITIONS
    if len(topics) == 1:
        return len(topics[0].partitions) <= limit
    return sum([len(topic.partitions) for topic in topics]) <= limit


def piece_by_piece(
    state: ControllerState,
    topics: Sequence[TopicT],
    decide: PieceDecider[TopicT, AnswerT],
    respond: Callable[[tuple[AnswerT, ...]], Data],
) -> Steps:
    """A request over more named partitions than one step: decided piece by piece (`pieces`), a
    batch each; the answers of a topic cut across pieces are joined, and `respond(answers)` builds
    the response once every piece is decided."""
    seen: set[TopicPartition] = set()
    answers: list[tuple[int, AnswerT]] = []
    for piece in pieces(topics, step_size(state)):
        positions, piece_answers, changes = decide(piece, seen)
        for position, answer in zip(positions, piece_answers, strict=True):
            if answers and answers[-1][0] == position:  # the rest of a topic cut at the last piece's end
                joined = (*answers[-1][1].partitions, *answer.partitions)
                answer = dataclasses.replace(answer, partitions=joined)  # type: ignore[type-var]
                answers.pop()
            answers.append((position, answer))
        yield records_of(changes)
    return respond(tuple(answer for _, answer in answers))


def pieces(topics: Sequence[TopicT], size: int) -> Iterator[list[tuple[int, TopicT]]]:
    """The topics cut into pieces of at most `size` partitions, in order: (position of the topic in
    the request, the topic with the piece's share of its partitions); a topic may be cut."""
    piece: list[tuple[int, TopicT]] = []
    room = size
    for position, topic in enumerate(topics):
        partitions = topic.partitions
        start = 0
        while True:
            share = partitions[start : start + room]
            whole = start == 0 and len(share) == len(partitions)
            piece.append((position, topic if whole else dataclasses.replace(topic, partitions=tuple(share))))  # type: ignore[type-var]
            start += len(share)
            room -= len(share)
            if room == 0:
                yield piece
                piece, room = [], size
            if start >= len(partitions):
                break
    if piece:
        yield piece


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
            batch.append(versioned(change))
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
