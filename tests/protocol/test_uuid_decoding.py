"""UUIDs as the decoders build them (protocol._runtime._uuid_from): right, shared while recent, bounded."""

from __future__ import annotations

import uuid

from protocol import _runtime
from protocol.records.metadata import (
    UNASSIGNED_DIRECTORY,
    PartitionRecord,
    decode_metadata_value,
    encode_metadata_value,
)


def test_a_uuid_is_decoded_from_bytes_bytearrays_and_memoryviews_alike() -> None:
    raw = uuid.uuid4().bytes
    for buffer in (raw, bytearray(raw), memoryview(bytearray(raw))):
        assert _runtime._uuid_from(buffer[0:16]) == uuid.UUID(bytes=raw)


def test_records_naming_the_same_topic_share_its_id_object() -> None:
    topic_id = uuid.uuid4()
    records = [
        PartitionRecord(
            partition_id=p, topic_id=topic_id, replicas=(1,), isr=(1,), leader=1, directories=(UNASSIGNED_DIRECTORY,)
        )
        for p in range(2)
    ]
    (first, _), (second, _) = (decode_metadata_value(encode_metadata_value(record, 1)) for record in records)
    assert first.topic_id == topic_id and first.topic_id is second.topic_id
    assert first.directories[0] is second.directories[0]


def test_the_uuids_kept_are_bounded_whatever_a_peer_sends() -> None:
    for value in range(3 * _runtime._MAX_RECENT_UUIDS):
        assert _runtime._uuid_from(value.to_bytes(16, "big")).int == value
        assert len(_runtime._RECENT_UUIDS) <= _runtime._MAX_RECENT_UUIDS
