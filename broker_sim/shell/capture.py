"""The fleet's capture: its exchanges in protocol.capture's format, as Parquet parts named "fleet-...".

Rules: `add` only appends to a list (the request path). `flush` (every `ROTATE_S` by the fleet's
ticker, and at the end) converts the buffered rows on the event loop and writes one part from a
worker thread: a temporary `.name.tmp`, then a rename, so readers only ever see whole parts. The
part sequence starts at `sequence_base` (the first broker id times a million), so that fleet
processes sharing a directory never pick the same name. A failed write is logged and its rows
are counted in `rows_dropped`; the capture never stops the fleet.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from protocol.capture import OUTBOUND, Exchange, part_name, to_table, write_parquet

from .runtime import wall_ns

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger("fencer.broker_sim.capture")
PREFIX = "fleet"
ROTATE_S = 2.0


class FleetCapture:
    def __init__(self, directory: Path, sequence_base: int = 0) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.rows: list[Exchange] = []
        self.sequence = sequence_base
        self.window_started_ns = wall_ns()
        self.rows_written = self.parts_written = self.rows_dropped = 0
        # pyarrow's first conversion initialises itself for half a second: not during the run
        to_table([Exchange(0, None, OUTBOUND, 0, "", 0, 0, 0, b"", None)])

    def add(self, exchange: Exchange) -> None:
        self.rows.append(exchange)

    async def flush(self) -> None:
        if not self.rows:
            return
        rows, self.rows = self.rows, []
        name = part_name(PREFIX, self.window_started_ns, self.sequence)
        self.sequence += 1
        self.window_started_ns = wall_ns()
        try:
            table = to_table(rows)
            await trio.to_thread.run_sync(_write, table, self.directory, name)
        except Exception as exc:  # a capture must never stop the fleet
            log.error("capture part %s not written: %s", name, exc)
            self.rows_dropped += len(rows)
            return
        self.rows_written += len(rows)
        self.parts_written += 1


def _write(table: pa.Table, directory: Path, name: str) -> None:
    temporary = directory / f".{name}.tmp"
    try:
        write_parquet(table, str(temporary))
        os.replace(temporary, directory / name)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
