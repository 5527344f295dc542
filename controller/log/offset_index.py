"""A segment's sparse offset index, in memory: where to start scanning batch headers for an offset.

Kafka's offset index (`index.interval.bytes`) without its file: one entry per
`INDEX_INTERVAL_BYTES` of segment, built by the recovery scan at open and extended by every
append, so that a read finds its batch by scanning at most one interval of headers, without
holding every batch's position (a 1 GiB segment of 100-byte batches holds ten million).

Rules:
- An entry is (base offset, byte position) of a batch; the first batch (position 0) is implicit.
  A batch gets an entry when it starts `interval` bytes or more after the last entry.
- `floor(offset)` is the last entry whose base offset is at or below `offset`: the batch
  holding `offset` starts there or later, never before.
- `truncate(offset)` forgets the entries of batches at or above a truncation point.
- Pure and not thread-safe: `LogCatalog` holds its lock around every call.
"""

from __future__ import annotations

import bisect
from array import array

#: Bytes of segment between two entries (Kafka's default `index.interval.bytes` is 4 KiB; a
#: header scan of 64 KiB from the page cache takes well under a millisecond here).
INDEX_INTERVAL_BYTES = 64 * 1024


class OffsetIndex:
    """(base offset, position) of one batch every `interval` bytes of one segment."""

    __slots__ = ("_base_offset", "_interval", "_offsets", "_positions")

    def __init__(self, base_offset: int, interval: int = INDEX_INTERVAL_BYTES) -> None:
        if interval <= 0:
            raise ValueError(f"the index interval must be positive, not {interval}")
        self._base_offset = base_offset
        self._interval = interval
        self._offsets = array("q")
        self._positions = array("q")

    def add(self, base_offset: int, position: int) -> None:
        """A batch now in the segment at `position` (in order): indexed if an interval has passed."""
        last = self._positions[-1] if self._positions else 0
        if position - last >= self._interval:
            self._offsets.append(base_offset)
            self._positions.append(position)

    def floor(self, offset: int) -> tuple[int, int]:
        """(base offset, position) of the last indexed batch at or below `offset`; (segment base, 0) if none."""
        index = bisect.bisect_right(self._offsets, offset) - 1
        if index < 0:
            return self._base_offset, 0
        return self._offsets[index], self._positions[index]

    def truncate(self, offset: int) -> None:
        """Forget the batches at or above `offset` (the segment was cut there)."""
        keep = bisect.bisect_left(self._offsets, offset)
        del self._offsets[keep:], self._positions[keep:]

    def __len__(self) -> int:
        return len(self._offsets)
