"""Deciding requests and staging their records (a mixin of `controller.engine.ControllerEngine`).

Rules:
- `decide` runs one request through the core and stages its records: they get their offsets at
  once and are replayed at once, so the next request sees them (as KRaft does), but nothing
  may be answered before they are committed (`ControllerEngine.commit` takes them).
- A decision is taken at once; staging a large batch, and the further steps of an operation
  decided in steps, run as paced work (`controller.slices`), a commit point after each batch once
  `commit_records` records are staged, so a long operation's memory stays bounded.
- An operation that fails inside its metadata transaction leaves the engine unusable (Kafka's
  controller resigns on such a fault): the in-memory state holds part of it, and only a
  restart's replay, which aborts the open transaction, reconciles state and log.
- The ISR totals are noted at the end of each staged batch that changed them, so that
  `committed_isr_changes` counts a change only once it is durable.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.api_keys import ApiKey
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.records.metadata import AbortTransactionRecord, BeginTransactionRecord, EndTransactionRecord
from protocol.spec import Data

from .control.orders import OutboundCollector
from .core import ControllerCore, batches
from .log import MetadataLog
from .ops.authorization import DEFAULT_CONTEXT, RequestContext
from .slices import COMMIT_POINT, Done, Slices, Work, paced
from .state.controller_state import Outcome, RecordAndVersion, Result, Steps
from .state.replication import IsrChanges

#: Records replayed between two pauses of a large batch's staging (about 2-5 ms of work here).
REPLAY_SLICE_RECORDS = 256


class NotActiveError(RuntimeError):
    """A decision asked of a standby (the writer answers NOT_CONTROLLER before it gets here)."""


class StagingMethods:
    """`ControllerEngine`'s decisions (see the module's rules)."""

    if TYPE_CHECKING:
        core: ControllerCore
        log: MetadataLog
        active: bool
        slice_seconds: float
        commit_records: int
        _staged: list[Sequence[RecordAndVersion]]
        _next_offset: int
        _taken_offset: int
        _broken: str | None
        _transaction: tuple[int, str | None] | None
        _orders: OutboundCollector
        _isr_marks: deque[tuple[int, IsrChanges]]

        def _check_usable(self) -> None: ...

    def decide(
        self, api_key: int, version: int, body: Data, now_ns: int, context: RequestContext = DEFAULT_CONTEXT
    ) -> Work[Data | None]:
        """Decide one request from `context` (who asks) and stage its records; the work's result is
        the response (send it only once committed). A request the authorizer refused anything
        leaves a `Denial` for `take_denials`.

        The decision is taken at once. Staging it, and the further steps of an operation decided
        in steps, happen at once too when small (`Done`), else as the returned work runs, paced
        (see `controller.slices`): a caller on an event loop lets other tasks run whenever it
        yields; `finish` runs it to the end. The control orders its records call for accumulate
        until `commit`."""
        self._check_usable()
        if not self.active and api_key != ApiKey.API_VERSIONS:
            raise NotActiveError(f"a standby decides nothing (api key {api_key}): the active controller does")
        outcome = self.core.handle(api_key, version, body, now_ns, self._next_offset, context)
        if type(outcome) is Result:
            if len(outcome.records) <= REPLAY_SLICE_RECORDS:
                self._stage_now(outcome.records)
                return Done(outcome.response)
            return paced(self._run(outcome), self.slice_seconds)
        assert not isinstance(outcome, Result)
        outcome = self._guarded(outcome)
        for _ in range(2):  # an operation in steps of one small batch is the common case too
            try:
                batch = next(outcome)
            except StopIteration as stop:
                return Done(stop.value)
            if len(batch) > REPLAY_SLICE_RECORDS:
                break
            self._stage_now(batch)
        else:
            return paced(self._run_after(outcome), self.slice_seconds)
        return paced(self._run_from(batch, outcome), self.slice_seconds)

    def expire_sessions(self, now_ns: int) -> Slices[None]:
        """Fence every broker whose session ran out (each in its own batches); stage the records."""
        self._check_usable()
        return paced(self._expire(now_ns), self.slice_seconds)

    def heartbeat_timed_out(self, request: BrokerHeartbeatRequest, now_ns: int) -> None:
        """A heartbeat the writer did not reach by its deadline: its broker's session is kept
        (soft state; nothing staged)."""
        if self.active:
            self.core.heartbeat_timed_out(request, now_ns)

    def _expire(self, now_ns: int) -> Slices[None]:
        while (outcome := self.core.expire_sessions(now_ns)) is not None:
            yield from self._run(outcome)

    def _run(self, outcome: Outcome) -> Slices[Data | None]:
        return (yield from self._run_after(self._guarded(batches(outcome))))

    def _guarded(self, steps: Steps) -> Steps:
        """`steps`; if deciding them fails inside a metadata transaction, the engine is unusable."""
        try:
            return (yield from steps)
        except Exception as exc:
            if self._transaction is not None:
                begin, name = self._transaction
                self._broken = (
                    f"an operation failed inside its metadata transaction ({name!r}, begun at offset {begin}): "
                    f"{exc!r}; a restart aborts the transaction"
                )
            raise

    def _run_after(self, steps: Steps) -> Slices[Data | None]:
        """Stage every batch `steps` still has (a commit point after each); its response."""
        try:
            batch = next(steps)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        return (yield from self._run_from(batch, steps))

    def _run_from(self, batch: Sequence[RecordAndVersion], steps: Steps) -> Slices[Data | None]:
        """Stage `batch`, then every batch `steps` still has, a commit point after each; its response."""
        while True:
            yield from self._stage(batch)
            # a batch boundary: the caller commits here once many records are staged
            yield COMMIT_POINT if self.staged_records >= self.commit_records else None
            try:
                batch = next(steps)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]

    @property
    def staged_records(self) -> int:
        """Records staged and not yet taken by `commit`."""
        return self._next_offset - self._taken_offset

    def _stage(self, records: Sequence[RecordAndVersion]) -> Slices[None]:
        """Give one batch its offsets and replay it (yielding every `REPLAY_SLICE_RECORDS`).

        The batch is handed to `commit` only once wholly replayed, so whatever runs while
        this pauses may take the batches before it, never part of this one."""
        base = self._next_offset
        self._next_offset += len(records)
        for start in range(0, len(records), REPLAY_SLICE_RECORDS):
            if start:
                yield None
            self._replay(records, base, start, start + REPLAY_SLICE_RECORDS)
        if records:
            self._staged_whole(records, base)

    def _stage_now(self, records: Sequence[RecordAndVersion]) -> None:
        """`_stage` in one go (a small batch)."""
        if records:
            base = self._next_offset
            self._next_offset += len(records)
            self._replay(records, base, 0, len(records))
            self._staged_whole(records, base)

    def _staged_whole(self, records: Sequence[RecordAndVersion], base: int) -> None:
        """A batch wholly replayed: hand it to the commit path, note its ISR totals and whether it
        opens or closes a metadata transaction (a marker stands alone in its batch)."""
        self._staged.append(records)
        self._note_isr_changes(base + len(records))
        if len(records) == 1:
            self._note_marker(records[0][0], base)

    def _note_marker(self, record: Data, offset: int) -> None:
        kind = type(record)
        if kind is BeginTransactionRecord:
            self._transaction = (offset, record.name)  # type: ignore[attr-defined]
        elif kind is EndTransactionRecord or kind is AbortTransactionRecord:
            self._transaction = None

    def _replay(self, records: Sequence[RecordAndVersion], base: int, start: int, stop: int) -> None:
        chunk = records[start:stop] if start or stop < len(records) else records
        self.core.apply([(record, base + start + i) for i, (record, _) in enumerate(chunk)], self._orders)

    def _note_isr_changes(self, end_offset: int) -> None:
        """Note the ISR totals after the batch just staged (ending at `end_offset`), if it changed them."""
        totals = self.core.isr_changes()
        if totals != self._isr_marks[-1][1]:
            self._committed_isr()  # drops the notes already durable: the deque stays short
            self._isr_marks.append((end_offset, totals))

    def _committed_isr(self) -> IsrChanges:
        """The ISR totals at the log's durable end: those of the newest note at or below it
        (batches are written whole and in order, so every note up to there is durable)."""
        durable, marks = self.log.next_offset, self._isr_marks
        while len(marks) > 1 and marks[1][0] <= durable:
            marks.popleft()
        return marks[0][1]
