"""Fuzz the decoders with random and mutated frames; count anything but a DecodeError as an escape.

Run on demand: `make fuzz` (1,000,000 cases) or
`.venv/bin/python tests/fuzz/fuzz_decode.py --cases 1000000 --seed 7`.
The suite runs a short version (tests/fuzz/test_fuzz_decode.py).

The corpus holds valid request and response frames of every API and version, metadata record
values and record batches; each case takes one and mutates it (bit flips, byte overwrites,
truncation, insertion, duplication, forged lengths) or replaces it with random bytes, then
decodes it the way the daemon would. A case "escapes" when decoding raises anything other
than `protocol.errors.DecodeError` (IndexError, struct.error, MemoryError, a construct error...).
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hypothesis import Phase, given, settings

from protocol.errors import DecodeError
from protocol.framing import FrameBuffer
from protocol.records.batch import decode_batch
from protocol.records.batch_writer import metadata_batch
from protocol.records.metadata import METADATA_RECORD_TYPES
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value
from protocol.registry import all_apis, decode_request, decode_response, encode_request, encode_response
from protocol.spec import Data
from tests.protocol.strategies import messages

Decoder = Callable[[bytes], Any]


def _examples(cls: type[Data], version: int, count: int) -> list[Data]:
    found: list[Data] = []

    @settings(max_examples=count, database=None, derandomize=True, phases=[Phase.generate], deadline=None)
    @given(messages(cls, version, unknown_tags=True))
    def collect(message: Data) -> None:
        found.append(message)

    collect()
    return found


def build_corpus(per_version: int = 3) -> list[tuple[str, bytes, Decoder]]:
    """(label, valid bytes, decoder) for every API version, direction, record type and a batch."""
    corpus: list[tuple[str, bytes, Decoder]] = []
    for info in all_apis():
        for version in info.versions:
            for message in _examples(info.request, version, per_version):
                frame = encode_request(message, version, correlation_id=7)[4:]
                corpus.append((f"{info.name}Request v{version}", frame, decode_request))
            for message in _examples(info.response, version, per_version):
                frame = encode_response(message, version, correlation_id=7)[4:]

                def decode(data: bytes, key: int = info.key, v: int = version) -> Any:
                    return decode_response(data, key, v)

                corpus.append((f"{info.name}Response v{version}", frame, decode))
    values = []
    for record_cls in METADATA_RECORD_TYPES.values():
        for version in record_cls.API.valid:
            for record in _examples(record_cls, version, per_version):
                value = encode_metadata_value(record, version)
                values.append(value)
                corpus.append((f"{record_cls.__name__} v{version}", value, decode_metadata_value))
    batch = metadata_batch(base_offset=10, leader_epoch=2, timestamp_ms=1_700_000_000_000, values=values[:20])
    corpus.append(("record batch", batch, lambda data: decode_batch(data, 0)))
    return corpus


def mutate(data: bytes, rng: random.Random) -> bytes:
    choice = rng.randrange(9)
    buf = bytearray(data)
    if choice == 0 or not buf:
        return rng.randbytes(rng.randrange(0, 64))
    if choice == 1:
        for _ in range(rng.randrange(1, 4)):
            position = rng.randrange(len(buf) * 8)
            buf[position // 8] ^= 1 << (position % 8)
        return bytes(buf)
    if choice == 2:
        for _ in range(rng.randrange(1, 4)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf)
    if choice == 3:
        return bytes(buf[: rng.randrange(len(buf))])
    if choice == 4:
        position = rng.randrange(len(buf) + 1)
        return bytes(buf[:position] + rng.randbytes(rng.randrange(1, 8)) + buf[position:])
    if choice == 5:
        start = rng.randrange(len(buf))
        end = min(len(buf), start + rng.randrange(1, 16))
        return bytes(buf[:end] + buf[start:end] + buf[end:])
    if choice == 6:
        # forge a large length: INT16 / INT32 / varint patterns at a random place
        forged = rng.choice([b"\x7f\xff", b"\x7f\xff\xff\xff", b"\xff\xff\xff\xff\x0f", b"\xfe\xff\xff\xff\x07"])
        position = rng.randrange(len(buf))
        return bytes(buf[:position] + forged + buf[position + len(forged) :])
    if choice == 7:
        position = rng.randrange(len(buf))
        del buf[position : position + rng.randrange(1, 8)]
        return bytes(buf)
    return bytes(buf) + rng.randbytes(rng.randrange(1, 4))


def run(cases: int, seed: int, progress: bool = False) -> dict[str, int]:
    rng = random.Random(seed)
    corpus = build_corpus()
    counts = {"cases": 0, "decoded": 0, "rejected": 0, "escapes": 0}
    started = time.monotonic()
    for index in range(cases):
        label, data, decoder = corpus[rng.randrange(len(corpus))]
        mutated = mutate(data, rng)
        counts["cases"] += 1
        try:
            if index % 16 == 0:
                # through the frame buffer too, with a small limit, as the daemon reads
                buffer = FrameBuffer(max_frame_bytes=4096)
                buffer.receive_data(struct.pack(">i", len(mutated)) + mutated)
                frames = buffer.frames()
                mutated = frames[0] if frames else mutated
            decoder(mutated)
            counts["decoded"] += 1
        except DecodeError:
            counts["rejected"] += 1
        except BaseException as exc:  # an escape: anything but the project's decode error
            if isinstance(exc, KeyboardInterrupt):
                raise
            counts["escapes"] += 1
            if counts["escapes"] <= 5:
                print(f"ESCAPE in {label}: {type(exc).__name__}: {exc}; input={mutated.hex()}", file=sys.stderr)
                traceback.print_exc()
        if progress and index and index % 100_000 == 0:
            print(
                f"  {index:,} cases, {time.monotonic() - started:.0f} s, {counts['escapes']} escapes",
                flush=True,
            )
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fuzz fencer's decoders")
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.cases < 1:
        parser.error("--cases must be >= 1")
    started = time.monotonic()
    counts = run(args.cases, args.seed, progress=True)
    elapsed = time.monotonic() - started
    print(
        f"{counts['cases']:,} cases in {elapsed:.0f} s (seed {args.seed}): {counts['decoded']:,} decoded, "
        f"{counts['rejected']:,} rejected with DecodeError, {counts['escapes']} escapes"
    )
    return 1 if counts["escapes"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
