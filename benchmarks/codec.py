"""Codec benchmark: fencer's compiled construct codec against kio 0.5.0 and a hand-written decoder.

Run: `make bench` (or `.venv/bin/python benchmarks/codec.py [--seconds S]`).

Everything is measured in this one run on this machine, so the ratios are what matter:
- decode and encode rates of fencer and kio on the same bytes and equal messages;
- AlterPartition v2 decode against a hand-written `struct.unpack_from` decoder that builds the
  same dataclasses (the ceiling for pure-Python decoding);
- reading a record batch of 1,000 PartitionChangeRecords (batch framing + CRC + every record
  value), with kio's batch reader as the reference for the batch framing part.
Targets: decode >= 1.0x kio everywhere, >= 0.3x the hand-written decoder.
"""

from __future__ import annotations

import argparse
import io
import platform
import struct
import sys
import time
import timeit
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kio.records.readers import read_batch as kio_read_batch
from kio.serial import entity_reader, entity_writer

from protocol.compiler import codec
from protocol.messages.alter_partition import (
    AlterPartitionRequest,
    AlterPartitionRequestBrokerState,
    AlterPartitionRequestPartitionData,
    AlterPartitionRequestTopicData,
)
from protocol.messages.broker_heartbeat import BrokerHeartbeatRequest
from protocol.messages.leader_and_isr import (
    LeaderAndIsrRequest,
    LeaderAndIsrRequestLiveLeader,
    LeaderAndIsrRequestPartitionState,
    LeaderAndIsrRequestTopicState,
)
from protocol.records.batch import decode_batch
from protocol.records.batch_writer import metadata_batch
from protocol.records.metadata import PartitionChangeRecord
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value
from tests.protocol.kio_bridge import kio_payload_class, to_kio

TOPIC_ID = uuid.UUID("4f4e0a5b-6d7c-4e1f-9a2b-3c4d5e6f7a8b")


def machine() -> str:
    """A one-line description of this machine for the report."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    import os

    return f"{model}, {os.cpu_count()} cores, Python {platform.python_version()}"


def rate(func: Callable[[], Any], seconds: float) -> float:
    """Operations per second: best of 5 timed runs of about `seconds`/5 each."""
    number = 1
    while True:
        elapsed = timeit.timeit(func, number=number)
        if elapsed > 0.02:
            break
        number *= 4
    number = max(1, int(number * (seconds / 5) / elapsed))
    best = min(timeit.repeat(func, number=number, repeat=5))
    return number / best


# ------------------------------------------------------------------------------- samples


def alter_partition(version: int, partitions: int) -> AlterPartitionRequest:
    parts = []
    for index in range(partitions):
        isr = (1, 2, 3)
        if version >= 3:
            part = AlterPartitionRequestPartitionData(
                partition_index=index,
                leader_epoch=7,
                new_isr_with_epochs=tuple(
                    AlterPartitionRequestBrokerState(broker_id=b, broker_epoch=100 + b) for b in isr
                ),
                partition_epoch=11,
            )
        else:
            part = AlterPartitionRequestPartitionData(
                partition_index=index, leader_epoch=7, new_isr=isr, partition_epoch=11
            )
        parts.append(part)
    return AlterPartitionRequest(
        broker_id=1,
        broker_epoch=42,
        topics=(AlterPartitionRequestTopicData(topic_id=TOPIC_ID, partitions=tuple(parts)),),
    )


def leader_and_isr(partitions: int) -> LeaderAndIsrRequest:
    states = tuple(
        LeaderAndIsrRequestPartitionState(
            partition_index=index,
            controller_epoch=3,
            leader=1 + index % 3,
            leader_epoch=5,
            isr=(1, 2, 3),
            partition_epoch=9,
            replicas=(1, 2, 3),
        )
        for index in range(partitions)
    )
    return LeaderAndIsrRequest(
        controller_id=1,
        is_k_raft_controller=True,
        controller_epoch=3,
        broker_epoch=42,
        type_=0,
        topic_states=(LeaderAndIsrRequestTopicState(topic_name="orders", topic_id=TOPIC_ID, partition_states=states),),
        live_leaders=tuple(
            LeaderAndIsrRequestLiveLeader(broker_id=b, host_name="localhost", port=9000 + b) for b in (1, 2, 3)
        ),
    )


# ------------------------------------------------------------------------------- hand-written


_IQ = struct.Struct(">iq")
_II = struct.Struct(">ii")
_BI = struct.Struct(">bi")


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def _skip_tags(buf: bytes, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    return pos


def handwritten_alter_partition_v2(buf: bytes) -> AlterPartitionRequest:
    """AlterPartition v2 decoded by hand with struct.unpack_from, to the same dataclasses.

    Written to be fast, as a ceiling: one-byte varints and empty tag buffers (the common case)
    are read inline; only longer ones call a helper. It does no validation at all.
    """
    broker_id, broker_epoch = _IQ.unpack_from(buf, 0)
    pos = 12
    count = buf[pos]
    if count < 0x80:
        pos += 1
    else:
        count, pos = _uvarint(buf, pos)
    topics = []
    for _ in range(count - 1):
        topic_id = uuid.UUID(bytes=buf[pos : pos + 16])
        pos += 16
        part_count = buf[pos]
        if part_count < 0x80:
            pos += 1
        else:
            part_count, pos = _uvarint(buf, pos)
        parts = []
        for _ in range(part_count - 1):
            index, leader_epoch = _II.unpack_from(buf, pos)
            pos += 8
            isr_count = buf[pos] - 1
            if isr_count < 0x7F:
                pos += 1
            else:
                isr_count, pos = _uvarint(buf, pos)
                isr_count -= 1
            isr = struct.unpack_from(f">{isr_count}i", buf, pos)
            pos += 4 * isr_count
            recovery, partition_epoch = _BI.unpack_from(buf, pos)
            pos += 5
            pos = pos + 1 if buf[pos] == 0 else _skip_tags(buf, pos)
            parts.append(
                AlterPartitionRequestPartitionData(
                    partition_index=index,
                    leader_epoch=leader_epoch,
                    new_isr=isr,
                    leader_recovery_state=recovery,
                    partition_epoch=partition_epoch,
                )
            )
        pos = pos + 1 if buf[pos] == 0 else _skip_tags(buf, pos)
        topics.append(AlterPartitionRequestTopicData(topic_id=topic_id, partitions=tuple(parts)))
    pos = pos + 1 if buf[pos] == 0 else _skip_tags(buf, pos)
    return AlterPartitionRequest(broker_id=broker_id, broker_epoch=broker_epoch, topics=tuple(topics))


# ------------------------------------------------------------------------------- runs


def message_case(name: str, message: Any, version: int, seconds: float) -> list[str]:
    ours = codec(type(message), version)
    data = ours.encode(message)
    kio_cls = kio_payload_class(message.API.key, version, message.API.kind)
    assert kio_cls is not None
    kio_message = to_kio(message, kio_cls)
    kio_writer = entity_writer(kio_cls)
    kio_reader = entity_reader(kio_cls)

    def kio_encode() -> bytes:
        out = io.BytesIO()
        kio_writer(out, kio_message)
        return out.getvalue()

    assert kio_encode() == data, f"{name}: kio and fencer disagree on the bytes"
    assert ours.decode_exact(data) == message
    ours_decode = rate(lambda: ours.decode(data), seconds)
    kio_decode = rate(lambda: kio_reader(data, 0), seconds)
    ours_encode = rate(lambda: ours.encode(message), seconds)
    kio_enc = rate(kio_encode, seconds)
    return [
        f"| {name} | {len(data)} | {ours_decode:,.0f} | {kio_decode:,.0f} | **{ours_decode / kio_decode:.2f}x** "
        f"| {ours_encode:,.0f} | {kio_enc:,.0f} | **{ours_encode / kio_enc:.2f}x** |"
    ]


def record_batch_case(seconds: float) -> list[str]:
    values = [
        encode_metadata_value(
            PartitionChangeRecord(partition_id=index % 100, topic_id=TOPIC_ID, isr=(1, 2, 3), leader=1 + index % 3),
            0,
        )
        for index in range(1000)
    ]
    data = metadata_batch(base_offset=1000, leader_epoch=3, timestamp_ms=1_700_000_000_000, values=values)

    def ours_full() -> int:
        batch, _ = decode_batch(data, 0)
        for record in batch.records:
            decode_metadata_value(record.value)  # type: ignore[arg-type]
        return len(batch.records)

    assert ours_full() == 1000
    full = rate(ours_full, seconds)
    ours_batch = rate(lambda: decode_batch(data, 0), seconds)
    kio_batch = rate(lambda: kio_read_batch(data, 0), seconds)
    return [
        f"| record batch framing + CRC, 1,000 records ({len(data)} B) | {ours_batch:,.0f} batches/s "
        f"| kio {kio_batch:,.0f} batches/s | **{ours_batch / kio_batch:.2f}x** |",
        f"| full read: batch + 1,000 PartitionChangeRecord values | {full:,.0f} batches/s "
        f"| = {full * 1000:,.0f} records/s | |",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time budget per measurement (default 1)")
    args = parser.parse_args(argv)
    seconds = args.seconds
    started = time.time()
    print(f"# fencer codec benchmark, {time.strftime('%Y-%m-%d')}, {machine()}")
    print()
    print(
        "| message | bytes | fencer decode/s | kio decode/s | decode ratio "
        "| fencer encode/s | kio encode/s | encode ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    cases = [
        ("AlterPartition v2, 1 partition", alter_partition(2, 1), 2),
        ("AlterPartition v2, 100 partitions", alter_partition(2, 100), 2),
        ("AlterPartition v3, 1 partition", alter_partition(3, 1), 3),
        ("AlterPartition v3, 100 partitions", alter_partition(3, 100), 3),
        (
            "BrokerHeartbeat v1",
            BrokerHeartbeatRequest(broker_id=1, broker_epoch=42, current_metadata_offset=1234),
            1,
        ),
        ("LeaderAndIsr v7, 100 partitions", leader_and_isr(100), 7),
    ]
    for name, message, version in cases:
        for line in message_case(name, message, version, seconds):
            print(line)
    print()
    print("| record batch | fencer | reference | ratio |")
    print("|---|---:|---:|---:|")
    for line in record_batch_case(seconds):
        print(line)
    print()
    sample = alter_partition(2, 1)
    data = codec(AlterPartitionRequest, 2).encode(sample)
    assert handwritten_alter_partition_v2(data) == codec(AlterPartitionRequest, 2).decode_exact(data)
    ours = rate(lambda: codec(AlterPartitionRequest, 2).decode(data), seconds)
    hand = rate(lambda: handwritten_alter_partition_v2(data), seconds)
    print("| AlterPartition v2 decode (1 partition) | decodes/s | ratio to hand-written |")
    print("|---|---:|---:|")
    print(f"| hand-written struct.unpack_from decoder | {hand:,.0f} | 1.00x |")
    print(f"| fencer compiled construct codec | {ours:,.0f} | **{ours / hand:.2f}x** |")
    print()
    print(f"(measured in {time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
