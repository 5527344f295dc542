"""The bytes appended since the newest snapshot: the snapshot trigger's input, exact while commits go on.

A snapshot ending at offset E counts, from then on, the bytes of the batches whose base offset
is at or above E (recovery counts them the same way at start-up). Commits may go on while a
snapshot is being written, so when it lands the batches appended meanwhile must stay counted:
`AppendedBytes` remembers where each batch since the newest snapshot starts in a running count.

Rules:
- Batches are added in offset order; `since(offset)` is the bytes of those at or above it.
- `truncate(offset)` forgets the batches at or above a truncation point as if never added.
- `forget_below(offset)` drops the batches below a new newest snapshot. Memory is 16 bytes per
  batch since the newest snapshot (two `array('q')`), under a quarter of the bytes those
  batches take on disk (a batch header alone is 61 bytes), which the snapshot trigger bounds.
- Not thread-safe: `MetadataLog` holds its lock around every call.
"""

from __future__ import annotations

import bisect
from array import array


class AppendedBytes:
    """A running count of appended batch bytes, with where each remembered batch starts in it."""

    __slots__ = ("_offsets", "_starts", "total")

    def __init__(self) -> None:
        self._offsets = array("q")  # base offset of each remembered batch, ascending
        self._starts = array("q")  # `total` just before that batch was added
        self.total = 0

    def add(self, base_offset: int, size: int) -> None:
        self._offsets.append(base_offset)
        self._starts.append(self.total)
        self.total += size

    def since(self, offset: int) -> int:
        """Bytes of the remembered batches whose base offset is at or above `offset`."""
        index = bisect.bisect_left(self._offsets, offset)
        return self.total - self._starts[index] if index < len(self._offsets) else 0

    def truncate(self, offset: int) -> None:
        """Forget the batches at or above `offset`, and their bytes (the log was truncated there)."""
        index = bisect.bisect_left(self._offsets, offset)
        if index < len(self._offsets):
            self.total = self._starts[index]
            del self._offsets[index:]
            del self._starts[index:]

    def forget_below(self, offset: int) -> None:
        """Stop remembering the batches whose base offset is below `offset`."""
        index = bisect.bisect_left(self._offsets, offset)
        del self._offsets[:index]
        del self._starts[:index]

    def __len__(self) -> int:
        return len(self._offsets)
