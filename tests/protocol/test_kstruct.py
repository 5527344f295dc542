"""The construct classes: compiled and interpreted paths agree, for every wire type and version."""

from __future__ import annotations

import io
import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.compiler import codec, struct_for
from protocol.errors import DecodeError

from .sample_messages import SampleItem, SampleLeaf, SampleMessage
from .strategies import messages

VERSIONS = [0, 1, 2, 3]


@pytest.mark.parametrize("version", VERSIONS)
@given(data=st.data())
def test_compiled_and_interpreted_agree(version: int, data: st.DataObject) -> None:
    message = data.draw(messages(SampleMessage, version, unknown_tags=True))
    compiled = codec(SampleMessage, version)
    interpreted = struct_for(SampleMessage, version)
    encoded = compiled.encode(message)
    assert interpreted.build(message) == encoded
    assert compiled.decode_exact(encoded) == message
    assert interpreted.parse(encoded) == message


def test_construct_compile_is_constructs_own() -> None:
    """The codec is construct's `Compiled`, usable through construct's API too."""
    import construct

    compiled = codec(SampleMessage, 2).compiled
    assert isinstance(compiled, construct.Compiled)
    message = SampleMessage(text="hi", numbers=(1, 2), tagged_int=7)
    assert compiled.parse(compiled.build(message)) == message
    # the compiled parser leaves the stream just after the message, so it composes
    stream = io.BytesIO(compiled.build(message) + b"rest")
    assert compiled.parse_stream(stream) == message
    assert stream.read() == b"rest"


def test_fixed_runs_are_one_unpack() -> None:
    """Consecutive fixed-width fields are read with one struct unpack (the speed rule)."""
    source = codec(SampleMessage, 0).compiled.source
    assert "_Struct('>?bhiqHId16s')" in source


def test_flexible_switches_to_compact_forms() -> None:
    message = SampleMessage(text="ab", numbers=(5,))
    legacy = codec(SampleMessage, 1).encode(message)
    flexible = codec(SampleMessage, 2).encode(message)
    fixed_size = struct.calcsize(">?bhiqHId16s")
    # STRING: INT16 length in v1, uvarint length + 1 in v2
    assert legacy[fixed_size : fixed_size + 4] == b"\x00\x02ab"
    assert flexible[fixed_size : fixed_size + 3] == b"\x03ab"


def test_tagged_fields_written_only_when_not_default_and_in_order() -> None:
    plain = codec(SampleMessage, 3).encode(SampleMessage())
    assert plain.endswith(b"\x00")  # empty tag buffer
    tagged = SampleMessage(tagged_text="x", tagged_int=1, unknown_tags=((4, b"\xaa"),))
    encoded = codec(SampleMessage, 3).encode(tagged)
    # 3 tags, ascending: 0 (int32 = 1), 4 (unknown, kept), 5 (compact string "x")
    assert encoded.endswith(b"\x03" + b"\x00\x04\x00\x00\x00\x01" + b"\x04\x01\xaa" + b"\x05\x02\x02x")
    assert codec(SampleMessage, 3).decode_exact(encoded) == tagged


def test_nested_struct_versions_follow_the_message_version() -> None:
    leaf = SampleLeaf(id=1, label="l", added_in_3=9)
    message = SampleMessage(items=(SampleItem(name="i", leaves=(leaf,)),))
    # added_in_3 is ignorable: dropped silently below v3, kept from v3
    assert codec(SampleMessage, 2).decode_exact(codec(SampleMessage, 2).encode(message)).items[0].leaves[0] == (
        SampleLeaf(id=1, label="l")
    )
    assert codec(SampleMessage, 3).decode_exact(codec(SampleMessage, 3).encode(message)) == message


def test_known_tag_with_wrong_size_is_rejected() -> None:
    encoded = bytearray(codec(SampleMessage, 3).encode(SampleMessage(tagged_int=1)))
    # tag 0 declares 4 bytes; claim 5 and append a byte: the int32 reader stops short
    tail = b"\x01\x00\x04\x00\x00\x00\x01"
    assert encoded.endswith(tail)
    broken = bytes(encoded[: -len(tail)]) + b"\x01\x00\x05\x00\x00\x00\x01\x00"
    with pytest.raises(DecodeError, match="size mismatch"):
        codec(SampleMessage, 3).decode_exact(broken)


def test_uuid_round_trip_keeps_value() -> None:
    ident = uuid.UUID("12345678-9abc-def0-1234-56789abcdef0")
    message = SampleMessage(ident=ident, idents=(ident, uuid.UUID(int=0)))
    for version in VERSIONS:
        assert codec(SampleMessage, version).decode_exact(codec(SampleMessage, version).encode(message)) == message
