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
  follower's; a leader's own batches are not decoded again), the rest from the disk. A read
  takes the batches it needs under the tail's lock, so an append in another thread never
  changes a read under way.
"""

from __future__ import annotations

import bisect
import threading
from pathlib import Path
from typing import NamedTuple

from protocol.records.batch import RecordBatch

#: at most this many batches, and this many bytes of them, are kept
TAIL_BATCHES = 4096
TAIL_BYTES = 2 << 20


class TailBatch(NamedTuple):
    path: Path  # the segment holding it
    base_offset: int
    end_offset: int  # the offset after its last record
    raw: bytes  # as written
    decoded: RecordBatch | None  # as a follower's check decoded it; None for a leader's own


class Tail:
    """The newest batches of the log (see the module's rules)."""

    def __init__(self) -> None:
        # a list that only grows at its end, its first `_first` entries dropped (compacted now and
        # then), so that a read finds its batch by bisection without copying the rest
        self._batches: list[TailBatch] = []
        self._first = 0
        self._bytes = 0
        self._lock = threading.Lock()  # the writing thread adds while the event loop reads

    def add(self, batches: list[TailBatch]) -> None:
        """`batches` were just written at the log's end."""
        with self._lock:
            held = self._batches
            if len(held) > self._first and batches and held[-1].end_offset != batches[0].base_offset:
                self._clear()
            for batch in batches:
                held.append(batch)
                self._bytes += len(batch.raw)
            while len(held) > self._first and (len(held) - self._first > TAIL_BATCHES or self._bytes > TAIL_BYTES):
                self._bytes -= len(held[self._first].raw)
                self._first += 1
            if self._first > len(held) // 2:
                del held[: self._first]
                self._first = 0

    def clear(self) -> None:
        with self._lock:
            self._clear()

    def _clear(self) -> None:
        self._batches = []
        self._first = self._bytes = 0

    def _from(self, offset: int) -> list[TailBatch] | None:
        with self._lock:
            held, first = self._batches, self._first
            if len(held) == first or not held[first].base_offset <= offset < held[-1].end_offset:
                return None
            at = bisect.bisect_right(held, offset, lo=first, key=lambda batch: batch.base_offset) - 1
            return held[at:]

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
