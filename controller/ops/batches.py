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
- An operation of more than one batch is one metadata transaction (KIP-868, as Kafka writes its
  non-atomic operations): a batch holding only a BeginTransactionRecord naming it, its batches,
  then a batch holding only an EndTransactionRecord (`in_transaction`). A controller that dies
  before the End leaves none of it applied: the next start aborts it. Markers stand in batches of
  their own, so they never count against a batch's record limit and the engine finds them by
  looking at one-record batches only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from protocol.records.metadata import BeginTransactionRecord, EndTransactionRecord, PartitionChangeRecord
from protocol.spec import Data

from ..state.controller_state import ControllerState, RecordAndVersion, Steps
from ..state.model import PartitionRegistration, TopicPartition
from .changes import records_of, versioned

STEP_PARTITIONS = 2000
T = TypeVar("T")
R = TypeVar("R")
Y = TypeVar("Y")

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
    *,
    name: str,
) -> Steps:
    """A request over more named partitions than one step: decided piece by piece (`pieces`), a
    batch each, in one metadata transaction named `name`; the answers of a topic cut across
    pieces are joined, and `respond(answers)` builds the response once every piece is decided."""
    return in_transaction(name, _piece_by_piece(state, topics, decide, respond))


def _piece_by_piece(
    state: ControllerState,
    topics: Sequence[TopicT],
    decide: PieceDecider[TopicT, AnswerT],
    respond: Callable[[tuple[AnswerT, ...]], Data],
) -> Steps:
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
    items: Sequence[T],
    decide: Callable[[T], PartitionChangeRecord | None],
    *,
    name: str,
    first: Sequence[RecordAndVersion] = (),
    last: Sequence[RecordAndVersion] = (),
) -> Iterator[list[RecordAndVersion]]:
    """Batches of `first`, then the change `decide(item)` gives for each item (None: no change),
    then `last`; in a metadata transaction named `name` when they may take more than one batch.

    A step decides at most `step_size` items, so a batch holds at most that many records (an
    item gives at most one); `first` opens the first batch and `last` closes the final one when
    they fit. Every batch is yielded (even an empty one) before the items after it are decided."""
    split = _batches(state, items, decide, first, last)
    if not in_several_batches(state, len(first) + len(items) + len(last)):
        return split  # one batch: atomic by itself
    return in_transaction(name, split)


def in_several_batches(state: ControllerState, records: int) -> bool:
    """May an operation of up to `records` records (and steps) take more than one batch? Then
    `batches` writes it in a transaction, its Begin first: the first data record's offset is one
    further (a registration's broker epoch is its record's offset)."""
    return records > step_size(state)


def in_transaction(name: str, steps: Generator[Y, None, R]) -> Generator[Y | list[RecordAndVersion], None, R]:
    """`steps` between a BeginTransactionRecord named `name` and an EndTransactionRecord, each in
    a batch of its own; the same return value. The Begin goes just before the first batch that
    holds a record: an operation that writes nothing (every item refused) writes no transaction
    either, as Kafka writes nothing for a result without records. Empty steps still pass."""
    begun = False
    while True:
        try:
            batch = next(steps)
        except StopIteration as stop:
            result: R = stop.value
            break
        if batch and not begun:
            begun = True
            yield [versioned(BeginTransactionRecord(name=name))]
        yield batch
    if begun:
        yield [versioned(EndTransactionRecord())]
    return result


def _batches(
    state: ControllerState,
    items: Iterable[T],
    decide: Callable[[T], PartitionChangeRecord | None],
    first: Sequence[RecordAndVersion],
    last: Sequence[RecordAndVersion],
) -> Generator[list[RecordAndVersion], None, None]:
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
    name: str,
    first: Sequence[RecordAndVersion] = (),
    last: Sequence[RecordAndVersion] = (),
) -> Iterator[list[RecordAndVersion]]:
    """`batches` over partitions: `decide(tp, partition)` for each of `tps` that still exists."""

    def decide_present(tp: TopicPartition) -> PartitionChangeRecord | None:
        part = state.replication.partition(tp)
        return None if part is None else decide(tp, part)

    return batches(state, tps, decide_present, name=name, first=first, last=last)


def answered_after(response: Data | None, batches: Iterator[list[RecordAndVersion]]) -> Steps:
    """Steps that write `batches` in order and answer `response` (decided beforehand)."""
    yield from batches
    return response
