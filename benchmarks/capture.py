"""Capture benchmark: the cost of `CaptureWriter.add` on the request path, and of a flush.

Run: `.venv/bin/python benchmarks/capture.py [--rows N] [--rounds R] [--dir DIR]`.

- Per call: building an `Exchange`, `add`, `due`, and the two `time.time_ns()` reads the daemon
  makes per exchange.
- Flush of N rows (default 10,000) of real frames: AlterPartition v3 requests of one partition
  (105 bytes) and their responses (64 bytes), split into building the Arrow table (holds the GIL)
  and writing the part (zstd, fsync, rename, directory fsync). fsync is on, so the figures are
  those of the disk under `--dir` (default: a temporary directory).
- Request path, two of them: codec only (decode the request, encode a response), and through the
  core (decode, decide, replay, encode; one ISR shrink per partition of a 20,000-partition topic).
  Each runs without capture, with capture (a clock read, `Exchange`, `add`), and with capture plus
  a worker thread flushing whenever `due()` as the daemon does, in parts of 5,000 rows (more often
  than the default, so flushes surely fall inside the timed runs). Neither path has the log
  append, its fsync or socket I/O, which the daemon's has: the percentages are upper bounds.
  Target: capture slows the request path by at most 15%.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.codec import alter_partition, machine
from benchmarks.core import brokers_records, load, new_core, topic_records
from controller.server.capture import CaptureWriter, write_part
from protocol.capture import INBOUND, Exchange, to_table
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
    AlterPartitionResponse,
    AlterPartitionResponsePartitionData,
    AlterPartitionResponseTopicData,
)
from protocol.records.metadata import PartitionRecord
from protocol.registry import Request, decode_request, encode_request, encode_response

VERSION = 3
RESPONSE = AlterPartitionResponse(
    topics=(
        AlterPartitionResponseTopicData(
            topic_id=uuid.UUID("4f4e0a5b-6d7c-4e1f-9a2b-3c4d5e6f7a8b"),
            partitions=(
                AlterPartitionResponsePartitionData(
                    partition_index=0, leader_id=1, leader_epoch=7, isr=(1, 2, 3), partition_epoch=12
                ),
            ),
        ),
    )
)


def request_payloads(count: int) -> list[bytes]:
    """`count` AlterPartition v3 request payloads (no size prefix), correlation ids 0..count-1."""
    body = alter_partition(VERSION, 1)
    return [encode_request(body, VERSION, index, client_id="broker-1")[4:] for index in range(count)]


def exchanges(count: int) -> list[Exchange]:
    response = encode_response(RESPONSE, VERSION, 0)[4:]
    now = time.time_ns()
    return [
        Exchange(
            now + index,
            now + index + 40_000,
            INBOUND,
            index % 64,
            f"10.0.0.{index % 64}:41234",
            56,
            VERSION,
            index,
            payload,
            response,
        )
        for index, payload in enumerate(request_payloads(count))
    ]


def per_call_ns(statement: Callable[[], object], number: int = 200_000) -> float:
    return min(timeit.repeat(statement, number=number, repeat=5)) / number * 1e9


def report_per_call(directory: Path) -> None:
    writer = CaptureWriter(directory / "per-call")
    sample = exchanges(1)[0]
    request, response = sample.request, sample.response

    def build() -> Exchange:
        return Exchange(1, 2, INBOUND, 3, "10.0.0.1:41234", 56, VERSION, 7, request, response)

    print(f"  Exchange(...)          {per_call_ns(build):7.0f} ns")
    print(f"  add(exchange)          {per_call_ns(lambda: writer.add(sample)):7.0f} ns")
    print(f"  due()                  {per_call_ns(writer.due):7.0f} ns")
    print(f"  2 x time.time_ns()     {2 * per_call_ns(time.time_ns):7.0f} ns")
    writer.close()


def report_flush(directory: Path, rows: int) -> None:
    sample = exchanges(rows)
    convert, write, total, sizes = [], [], [], []
    for run in range(5):
        start = time.perf_counter()
        table = to_table(sample)
        middle = time.perf_counter()
        sizes.append(write_part(table, directory, f"split-{run}.parquet"))
        end = time.perf_counter()
        convert.append(middle - start)
        write.append(end - middle)
        writer = CaptureWriter(directory / f"flush-{run}", rotate_rows=rows)
        for exchange in sample:
            writer.add(exchange)
        start = time.perf_counter()
        writer.flush()
        total.append(time.perf_counter() - start)
    raw = sum(len(e.request) + len(e.response or b"") for e in sample)
    print(f"  flush of {rows:,} rows    {statistics.median(total) * 1e3:7.1f} ms (median of 5), of which:")
    print(f"    Arrow table         {statistics.median(convert) * 1e3:7.1f} ms (holds the GIL)")
    print(f"    Parquet + fsync      {statistics.median(write) * 1e3:7.1f} ms")
    print(f"  part size              {sizes[0] / 1e6:7.2f} MB for {raw / 1e6:.2f} MB of raw frames")


Handler = Callable[[Request], bytes]


def serve(payloads: list[bytes], handle: Handler, writer: CaptureWriter | None) -> float:
    """Requests/s of decode -> `handle` -> response payload over `payloads`, capturing if `writer`."""
    start = time.perf_counter()
    for payload in payloads:
        received = time.time_ns()
        request = decode_request(payload)
        response = handle(request)
        if writer is not None:
            header = request.header
            writer.add(
                Exchange(
                    received,
                    time.time_ns(),
                    INBOUND,
                    1,
                    "10.0.0.1:41234",
                    header.request_api_key,
                    header.request_api_version,
                    header.correlation_id,
                    payload,
                    response,
                )
            )
    return len(payloads) / (time.perf_counter() - start)


def codec_only() -> Handler:
    def handle(request: Request) -> bytes:
        return encode_response(RESPONSE, request.api_version, request.correlation_id)[4:]

    return handle


def through_core(partitions: int) -> Handler:
    """A fresh core with `partitions` partitions: decide, replay, encode (no log append, no I/O)."""
    core = new_core()
    _, records = topic_records("capture", partitions)
    load(core, brokers_records() + records)
    offset = core.state.last_offset + 1

    def handle(request: Request) -> bytes:
        nonlocal offset
        result = core.handle(request.api_key, request.api_version, request.body, 0, offset)
        core.apply([(record, offset + index) for index, (record, _) in enumerate(result.records)])
        offset += len(result.records)
        assert result.response is not None
        return encode_response(result.response, request.api_version, request.correlation_id)[4:]

    return handle


def isr_shrinks(partitions: int) -> list[bytes]:
    """One AlterPartition v2 request per partition of `through_core`'s topic, shrinking its ISR to 2."""
    topic_id, records = topic_records("capture", partitions)
    payloads = []
    for record, _ in records[1:]:
        assert isinstance(record, PartitionRecord)
        data = AlterPartitionRequestPartitionData(
            partition_index=record.partition_id, leader_epoch=0, new_isr=record.isr[:2], partition_epoch=0
        )
        body = AlterPartitionRequest(
            broker_id=record.leader,
            broker_epoch=record.leader,
            topics=(AlterPartitionRequestTopicData(topic_id=topic_id, partitions=(data,)),),
        )
        payloads.append(encode_request(body, 2, record.partition_id, client_id=f"broker-{record.leader}")[4:])
    return payloads


def flush_when_due(writer: CaptureWriter, stop: threading.Event) -> None:
    while not stop.wait(0.05):
        if writer.due():
            writer.flush()


def with_flushes(payloads: list[bytes], handler: Handler, directory: Path) -> float:
    """`serve` with capture and a thread flushing whenever due, in parts of 5,000 rows."""
    writer = CaptureWriter(directory / "flushed", rotate_rows=5_000)
    stop = threading.Event()
    flusher = threading.Thread(target=flush_when_due, args=(writer, stop))
    flusher.start()
    rate = serve(payloads, handler, writer)
    stop.set()
    flusher.join()
    writer.close()
    return rate


def one_round(payloads: list[bytes], new_handler: Callable[[], Handler], directory: Path, turn: int) -> list[float]:
    """Rates without capture, with `add`, with `add` + flushes; run in an order rotated by `turn`."""
    variants: list[Callable[[Handler], float]] = [
        lambda handler: serve(payloads, handler, None),
        lambda handler: serve(payloads, handler, CaptureWriter(directory / "added", rotate_rows=10**9)),
        lambda handler: with_flushes(payloads, handler, directory),
    ]
    rates = [0.0] * len(variants)
    for step in range(len(variants)):
        index = (step + turn) % len(variants)
        rates[index] = variants[index](new_handler())
    return rates


def report_request_path(
    title: str, payloads: list[bytes], new_handler: Callable[[], Handler], rounds: int, directory: Path
) -> None:
    """Interleaved rounds, compared pairwise: load from other processes drifts slower than a round."""
    results: list[list[float]] = []
    for turn in range(rounds):
        results.append(one_round(payloads, new_handler, Path(tempfile.mkdtemp(dir=directory)), turn))
    print(f"{title}: {len(payloads):,} requests per run, {rounds} rounds")
    print("  (cost: median over rounds of the extra time per request against the same round's baseline)")
    for index, label in enumerate(["without capture", "with add()", "with add() + flushes"]):
        best = max(r[index] for r in results)
        cost = statistics.median(r[0] / r[index] - 1 for r in results) * 100
        print(f"  {label:22} {best:8,.0f} req/s best ({1e6 / best:5.1f} us)   cost {cost:+5.1f}%")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=10_000, help="rows per measured flush")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of each request-path variant")
    parser.add_argument("--dir", type=Path, default=None, help="where to write (default: a temporary directory)")
    args = parser.parse_args(argv)
    print(f"capture benchmark on {machine()}")
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        directory = Path(name)
        print("per call:")
        report_per_call(directory)
        print("flush:")
        report_flush(directory, args.rows)
        codec_payloads = request_payloads(50_000)
        title = "request path, codec only (decode + encode)"
        report_request_path(title, codec_payloads, codec_only, args.rounds, directory)
        core_payloads = isr_shrinks(20_000)
        title = "request path through the core (decode + decide + replay + encode)"
        report_request_path(title, core_payloads, lambda: through_core(len(core_payloads)), args.rounds, directory)


if __name__ == "__main__":
    main()
