"""Small captures built from known frames, for the analytics tests (test-only).

`exchange(...)` encodes a request body and its response body with fencer's codec into one
capture row at a given time; `write_capture` writes rows as one part file named as the daemon
(prefix "capture") or the fleet (prefix "fleet") names them, so the job reads them as it reads
real captures.
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Sequence
from pathlib import Path

import pyarrow.parquet as pq

from protocol.capture import INBOUND, Exchange, part_name, to_table
from protocol.registry import encode_request, encode_response
from protocol.spec import Data

#: 2026-11-23 10:00:00 UTC, the captures' time zero.
T0_NS = int(datetime.datetime(2026, 11, 23, 10, tzinfo=datetime.UTC).timestamp()) * 1_000_000_000
MS = 1_000_000

_correlations = itertools.count(1)


def exchange(
    request: Data,
    version: int,
    response: Data | None,
    *,
    at_ms: float,
    latency_ms: float = 1.0,
    correlation_id: int | None = None,
    direction: str = INBOUND,
    peer: str = "127.0.0.1:40000",
    connection_id: int = 1,
) -> Exchange:
    """One capture row: `request` sent at T0 + `at_ms`, answered `latency_ms` later (or never)."""
    correlation = next(_correlations) if correlation_id is None else correlation_id
    sent = T0_NS + round(at_ms * MS)
    return Exchange(
        request_time_ns=sent,
        response_time_ns=None if response is None else sent + round(latency_ms * MS),
        direction=direction,
        connection_id=connection_id,
        peer=peer,
        api_key=request.API.key,
        api_version=version,
        correlation_id=correlation,
        request=encode_request(request, version, correlation)[4:],
        response=None if response is None else encode_response(response, version, correlation)[4:],
    )


def raw_exchange(
    request: bytes, response: bytes | None, *, api_key: int, api_version: int, correlation_id: int, at_ms: float
) -> Exchange:
    """A row holding arbitrary frames (corrupt captures)."""
    sent = T0_NS + round(at_ms * MS)
    return Exchange(
        sent, None if response is None else sent + MS, INBOUND, 1, "127.0.0.1:40000",
        api_key, api_version, correlation_id, request, response,
    )  # fmt: skip


def write_capture(directory: Path, rows: Sequence[Exchange], prefix: str = "capture", sequence: int = 0) -> Path:
    """Write `rows` as one part file of `directory` (created if needed); its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / part_name(prefix, min(row.request_time_ns for row in rows), sequence)
    pq.write_table(to_table(rows), path, compression="zstd")
    return path
