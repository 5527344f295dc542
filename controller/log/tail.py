"""The log's newest batches kept in memory as they were written: a leader answers its followers'
fetches from them, and a follower's standby catches up from the batches it decoded when it
checked them, both right after the batches were appended, without reading the disk again.

Rules:
- The tail holds batches exactly as they lie in the log: each is added in the thread that
  writes it, once it is written, and only as a continuation of the batches held (else the tail
  starts again from it). Any truncation or reset of the log empties it, so a batch the tail
  holds is always the one at its offsets on disk.
- It is bounded (`TAIL_BATCHES` batches, `TAIL_BYTES` bytes of batches): the oldest leave first.
- A read from an offset the tail holds is answered from it; from below it, the caller reads
  the disk as before. Decoded records are read from the tail while its batches carry them (a
  follower's; a leader's own batches are not decoded again), the rest from the disk. The tail is
  read as it was when the read began (a copy under the GIL), so an append in another thread
  never changes a read under way.
"""

from __future__ import annotations

import bisect
from collections import deque
from pathlib import Path
from typing import NamedTuple

from protocol.records.batch import RecordBatch

#: at most this many batches, and this many bytes of them, are kept
TAIL_BATCHES = 4096
TAIL_BYTES = 8 << 20


class TailBatch(NamedTuple):
    path: Path  # the segment holding it
    base_offset: int
    end_offset: int  # the offset after its last record
    raw: bytes  # as written
    decoded: RecordBatch | None  # as a follower's check decoded it; None for a leader's own


class Tail:
    """The newest batches of the log (see the module's rules)."""

    def __init__(self) -> None:
        self._batches: deque[TailBatch] = deque()
        self._bytes = 0

    def add(self, batches: list[TailBatch]) -> None:
        """`batches` were just written at the log's end."""
        held = self._batches
        if held and batches and held[-1].end_offset != batches[0].base_offset:
            self.clear()
        for batch in batches:
            held.append(batch)
            self._bytes += len(batch.raw)
        while held and (len(held) > TAIL_BATCHES or self._bytes > TAIL_BYTES):
            self._bytes -= len(held.popleft().raw)

    def clear(self) -> None:
        self._batches.clear()
        self._bytes = 0

    def _from(self, offset: int) -> list[TailBatch] | None:
        held = tuple(self._batches)  # one copy, atomic under the GIL
        if not held or not held[0].base_offset <= offset < held[-1].end_offset:
            return None
        return list(held[bisect.bisect_right(held, offset, key=lambda batch: batch.base_offset) - 1 :])

    def records(self, offset: int, max_bytes: int) -> bytes | None:
        """Whole batches from the one holding `offset`, of one segment, up to `max_bytes` but at
        least one (as `ReplicationMethods.read_records` reads the disk); None when the tail does
        not hold `offset`."""
        batches = self._from(offset)
        if batches is None:
            return None
        first = batches[0]
        taken, size = [first.raw], len(first.raw)
        for batch in batches[1:]:
            if batch.path != first.path or size + len(batch.raw) > max_bytes:
                break
            taken.append(batch.raw)
            size += len(batch.raw)
        return b"".join(taken)

    def decoded(self, offset: int) -> tuple[list[tuple[Path, RecordBatch]], int] | None:
        """The decoded batches holding `offset` and after, up to the first the tail holds
        undecoded, and the offset after them; None when the tail holds `offset` undecoded or not
        at all."""
        batches = self._from(offset)
        if batches is None or batches[0].decoded is None:
            return None
        run: list[tuple[Path, RecordBatch]] = []
        end = offset
        for batch in batches:
            if batch.decoded is None:
                break
            run.append((batch.path, batch.decoded))
            end = batch.end_offset
        return run, end
