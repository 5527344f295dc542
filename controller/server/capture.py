"""Traffic capture: every exchange (both directions) as a row of rotated, atomically published Parquet parts.

Purpose: with `--capture-dir`, the daemon hands each finished exchange (request frame, response
frame or None, envelope) to a `CaptureWriter`; analytics (Spark, DuckDB, pyarrow) read the
directory as it is, without project code, and decode the raw frames with `protocol`. The format
itself (schema, row type, conversion, part names) is `protocol.capture`, shared with the fleet and
analytics; this module writes it.

Rules:
- `add` is the only call on the request path: one `deque.append`, no clock, no I/O, no lock.
  `deque.append` and `deque.popleft` are atomic, so `flush` (in a worker thread) takes exactly the
  rows that were buffered when it started, one `popleft` each, while `add` keeps appending: nothing
  is lost or written twice, and `add` never waits for a flush.
- The daemon converts a part's rows on its event loop in slices (`take`, `to_batches`) and only
  writes it from a worker thread (`write`): pyarrow's conversion holds the GIL in C loops for as
  long as it runs, which would stall the event loop from a thread. `flush` does all of it at once.
- `due()` is true when `rotate_rows` rows are buffered, or when rows are buffered and
  `rotate_seconds` have passed since the last part was taken (so a crash loses at most about
  `rotate_seconds` of rows, plus the time the daemon takes to notice). The daemon polls it and then
  takes, converts and writes a part as above; `flush` (all of it in one blocking call, as `close`
  uses it) is for a worker thread. A part holds at most `rotate_rows` rows (one row group).
- A part is written as `.<name>.tmp`, fsync'd, renamed to `<prefix>-<start ns>-<sequence>.parquet`,
  then the directory is fsync'd. The start is the wall-clock time the part's collection window
  opened, 19 digits, so names sort by time. Readers skip names starting with `.` (pyarrow, Spark)
  or not ending in `.parquet` (DuckDB's `dir/*.parquet`), so they only ever see whole parts.
  Temporary files of a crashed writer are never valid parts: the next writer removes them.
  One writer per (directory, prefix).
- A failed flush (disk full, a malformed exchange) removes its temporary file, counts its rows in
  `rows_dropped` and raises; the writer stays usable. The caller decides whether to log or stop.
- Compression zstd; dictionary encoding and statistics only on the envelope columns (raw frames are
  unique and their min/max is useless), so frames cost compression only.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa

from protocol.capture import Exchange, Part, part_name, temporary_pattern, to_table, write_parquet

from .. import runtime
from ..log.segments import fsync_directory


def write_part(table: pa.Table, directory: Path, name: str) -> int:
    """Publish `table` as `directory/name` atomically and durably; return the file's size in bytes."""
    temporary = directory / f".{name}.tmp"
    try:
        write_parquet(table, str(temporary))
        size = _fsync_file(temporary)
        runtime.replace(temporary, directory / name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_directory(directory)
    return size


def _fsync_file(path: Path) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        runtime.fsync(fd)
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


def remove_temporaries(directory: Path, prefix: str) -> list[Path]:
    """Delete the temporary parts a crashed writer with this prefix left behind; return them."""
    pattern = temporary_pattern(prefix)
    leftovers = sorted(path for path in directory.iterdir() if pattern.fullmatch(path.name))
    for path in leftovers:
        path.unlink(missing_ok=True)
    if leftovers:
        fsync_directory(directory)
    return leftovers


class CaptureWriter:
    """Buffers exchanges from the event loop; writes them as Parquet parts from a worker thread."""

    def __init__(
        self,
        directory: Path,
        *,
        rotate_seconds: float = 2.0,
        rotate_rows: int = 50_000,
        prefix: str = "capture",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if rotate_rows < 1 or rotate_seconds <= 0:
            raise ValueError("rotate_rows must be >= 1 and rotate_seconds > 0")
        if not prefix or "/" in prefix or prefix.startswith((".", "_")):
            raise ValueError(f"prefix {prefix!r} must be a plain name not starting with '.' or '_'")
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.rotate_seconds = rotate_seconds
        self.rotate_rows = rotate_rows
        self.prefix = prefix
        self.removed_temporaries = remove_temporaries(self.directory, prefix)
        self.rows_written = self.parts_written = self.bytes_written = self.rows_dropped = 0
        self._clock = clock
        self._buffer: deque[Exchange] = deque()
        self._flush_lock = threading.Lock()  # one flush at a time: sequence numbers and counters
        self._window_started = clock()
        self._window_started_ns = time.time_ns()
        self._sequence = 0

    def add(self, exchange: Exchange) -> None:
        """Buffer one exchange (request path: O(1), no I/O, safe against a concurrent flush)."""
        self._buffer.append(exchange)

    @property
    def buffered(self) -> int:
        """Rows added and not yet taken by a flush."""
        return len(self._buffer)

    def due(self) -> bool:
        """True when a part should be written now (enough rows, or rows waiting long enough)."""
        buffered = len(self._buffer)
        if buffered >= self.rotate_rows:
            return True
        return buffered > 0 and self._clock() - self._window_started >= self.rotate_seconds

    def flush(self) -> Path | None:
        """Write up to `rotate_rows` buffered rows as one part (blocking); its path, or None if none."""
        with self._flush_lock:
            part = self._take()
            if part is None:
                return None
            try:
                table = to_table(part.rows)
            except BaseException:
                self.rows_dropped += len(part.rows)
                raise
            return self._write(part, table)

    def take(self) -> Part | None:
        """The rows of the next part (and open the next window), to convert and `write` in steps."""
        with self._flush_lock:
            return self._take()

    def write(self, part: Part, table: pa.Table) -> Path:
        """Publish a `take`n part, converted to `table` (blocking: Parquet encoding, fsync, rename)."""
        with self._flush_lock:
            return self._write(part, table)

    def dropped(self, part: Part) -> None:
        """Count a `take`n part that could not be converted."""
        with self._flush_lock:
            self.rows_dropped += len(part.rows)

    def _write(self, part: Part, table: pa.Table) -> Path:
        name = part_name(self.prefix, part.started_ns, part.sequence)
        try:
            size = write_part(table, self.directory, name)
        except BaseException:
            self.rows_dropped += len(part.rows)
            raise
        self.rows_written += len(part.rows)
        self.parts_written += 1
        self.bytes_written += size
        return self.directory / name

    def _take(self) -> Part | None:
        """Pop the rows of the next part and, if any, open the next window (under the flush lock)."""
        count = min(len(self._buffer), self.rotate_rows)
        if not count:
            return None
        popleft = self._buffer.popleft
        part = Part([popleft() for _ in range(count)], self._window_started_ns, self._sequence)
        self._window_started = self._clock()
        self._window_started_ns = max(time.time_ns(), part.started_ns + 1)  # names stay unique and sorted
        self._sequence += 1
        return part

    def close(self) -> Path | None:
        """Flush the rows buffered now (several parts if over `rotate_rows`); the last part's path.

        Bounded by the rows present when called, so a producer that keeps adding cannot keep it
        looping: stop adding first.
        """
        last = None
        for _ in range(-(-len(self._buffer) // self.rotate_rows)):
            last = self.flush() or last
        return last
