"""UUIDs as the decoders build them (protocol._runtime._uuid_from): right, shared while recent, bounded."""

from __future__ import annotations

import uuid

from protocol import _runtime
from protocol.records.metadata import UNASSIGNED_DIRECTORY, PartitionRecord
from protocol.records.metadata_value import decode_metadata_value, encode_metadata_value


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


def test_short_uuid_arrays_are_shared_while_recent_and_long_ones_never_kept() -> None:
    short = b"".join(uuid.UUID(int=value).bytes for value in range(3))
    first, second = (_runtime._uuid_array(short, 0, 3) for _ in range(2))
    assert first == tuple(uuid.UUID(int=value) for value in range(3)) and first is second
    count = _runtime._MAX_CACHED_UUID_ARRAY + 1  # a peer's long array: decoded, not kept
    long = b"".join(uuid.UUID(int=value).bytes for value in range(count))
    _runtime._RECENT_UUID_ARRAYS.clear()
    assert [u.int for u in _runtime._uuid_array(memoryview(long), 0, count)] == list(range(count))
    assert not _runtime._RECENT_UUID_ARRAYS
    for value in range(3 * _runtime._MAX_RECENT_UUIDS):  # and the short ones kept are bounded
        _runtime._uuid_array(value.to_bytes(16, "big"), 0, 1)
        assert len(_runtime._RECENT_UUID_ARRAYS) <= _runtime._MAX_RECENT_UUIDS


def test_a_uuid_array_encodes_the_same_from_the_tuple_last_encoded_or_a_list() -> None:
    values = tuple(uuid.uuid4() for _ in range(3))
    raw = b"".join(value.bytes for value in values)
    assert _runtime._uuid_array_bytes(values) == _runtime._uuid_array_bytes(values) == raw
    assert _runtime._uuid_array_bytes(list(values)) == raw and _runtime._uuid_array_bytes(()) == b""
