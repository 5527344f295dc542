"""Names the generated codec functions use (imported into each compiled module).

Kept tiny and dependency-free: the generated code calls these only off its fast paths
(multi-byte varints, tag buffers, errors).
"""

from __future__ import annotations

import functools
import importlib
import itertools
import struct as _struct
import uuid as _uuid

from .errors import DecodeError, EncodeError, TruncatedError
from .primitives import read_uvarint, uvarint

__all__ = [
    "_UUID",
    "DecodeError",
    "EncodeError",
    "TruncatedError",
    "_Struct",
    "_array_structs",
    "_load",
    "_new",
    "_pack",
    "_read_uvarint",
    "_setter",
    "_truncated",
    "_unpack_from",
    "_uuid_array",
    "_uuid_array_bytes",
    "_uuid_from",
    "_uvarint",
    "_write_known_tags",
    "_write_tags",
]

_Struct = _struct.Struct
_pack = _struct.pack
_unpack_from = _struct.unpack_from
_UUID = _uuid.UUID
_read_uvarint = read_uvarint
_uvarint = uvarint


def _load(module: str, qualname: str) -> object:
    """A class by module and qualified name (the compiled modules reference messages this way)."""
    obj: object = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _setter(module: str, qualname: str, field: str) -> object:
    """The slot setter of a field: how compiled decoders fill a frozen dataclass directly."""
    cls = _load(module, qualname)
    return getattr(cls, field).__set__


_new = object.__new__
_from_bytes = int.from_bytes
_SET_UUID_INT = _uuid.UUID.__dict__["int"].__set__
_SET_UUID_SAFE = _uuid.UUID.__dict__["is_safe"].__set__
_SAFE_UNKNOWN = _uuid.SafeUUID.unknown


#: UUIDs decoded lately, by their bytes (`_uuid_from`), at most `_MAX_RECENT_UUIDS`
_RECENT_UUIDS: dict[bytes, _uuid.UUID] = {}
_MAX_RECENT_UUIDS = 4096


def _uuid_from(raw: bytes) -> _uuid.UUID:
    """`uuid.UUID(bytes=raw)` without the checks of `UUID.__init__` (3x faster; raw is 16 bytes).
    A UUID decoded lately is the same object again (UUIDs are immutable): a snapshot names its
    topic's id in each of the topic's partition records, and the same directories in all of them.
    The recent ones are forgotten all at once when `_MAX_RECENT_UUIDS` are kept."""
    if type(raw) is not bytes:  # a slice of a bytearray or memoryview: not hashable as it is
        raw = bytes(raw)
    value = _RECENT_UUIDS.get(raw)
    if value is None:
        value = _new(_UUID)
        _SET_UUID_INT(value, _from_bytes(raw, "big"))
        _SET_UUID_SAFE(value, _SAFE_UNKNOWN)
        if len(_RECENT_UUIDS) >= _MAX_RECENT_UUIDS:
            _RECENT_UUIDS.clear()
        _RECENT_UUIDS[raw] = value
    return value


if _uuid_from(bytes(range(16))) != _UUID(bytes=bytes(range(16))):  # pragma: no cover - other Pythons

    def _uuid_from(raw: bytes) -> _uuid.UUID:
        return _uuid.UUID(bytes=raw)


#: UUID arrays decoded lately, by their bytes (`_uuid_array`), at most `_MAX_RECENT_UUIDS` of at
#: most `_MAX_CACHED_UUID_ARRAY` UUIDs each (a peer's long arrays must not fill memory)
_RECENT_UUID_ARRAYS: dict[bytes, tuple[_uuid.UUID, ...]] = {}
_MAX_CACHED_UUID_ARRAY = 16


def _uuid_array(buf: bytes, pos: int, count: int) -> tuple[_uuid.UUID, ...]:
    """The `count` UUIDs at `pos`; a short array decoded lately is the same tuple again (a
    partition record's directories, one per replica, repeat across a whole snapshot), forgotten
    as `_uuid_from` forgets."""
    raw = buf[pos : pos + 16 * count]
    if type(raw) is not bytes:  # a slice of a bytearray or memoryview: not hashable as it is
        raw = bytes(raw)
    kept = count <= _MAX_CACHED_UUID_ARRAY
    found = _RECENT_UUID_ARRAYS.get(raw) if kept else None
    if found is None:
        found = tuple([_uuid_from(raw[at : at + 16]) for at in range(0, 16 * count, 16)])
        if kept:
            if len(_RECENT_UUID_ARRAYS) >= _MAX_RECENT_UUIDS:
                _RECENT_UUID_ARRAYS.clear()
            _RECENT_UUID_ARRAYS[raw] = found
    return found


#: the UUID tuple last encoded by `_uuid_array_bytes` and its bytes (the tuple is held, so its
#: identity cannot pass to another one while it is here); replaced whole, so any thread may read it
_LAST_UUID_ARRAY: tuple[tuple[_uuid.UUID, ...], bytes] = ((), b"")


def _uuid_array_bytes(values: tuple[_uuid.UUID, ...]) -> bytes:
    """The 16 bytes of each UUID of `values`, in order. The tuple encoded last is answered at once:
    partitions share one directories tuple (`controller.state.model.shared_directories`), and a
    snapshot encodes it once per partition."""
    global _LAST_UUID_ARRAY
    last, raw = _LAST_UUID_ARRAY
    if values is last:
        return raw
    raw = b"".join([value.int.to_bytes(16, "big") for value in values])
    if type(values) is tuple:  # a list could change under the cache
        _LAST_UUID_ARRAY = (values, raw)
    return raw


#: arrays of up to this many fixed-size elements are read with a `struct.Struct` made once
_CACHED_ARRAY_LENGTH = 64


@functools.cache
def _array_structs(fmt: str) -> tuple[_struct.Struct, ...]:
    """The compiled formats of arrays of 0 to `_CACHED_ARRAY_LENGTH - 1` elements of `fmt`
    (big-endian): unpacking with one is half the cost of formatting the format each time. Made
    once per format and shared by every codec that reads or writes such arrays."""
    return tuple(_struct.Struct(f">{count}{fmt}") for count in range(_CACHED_ARRAY_LENGTH))


def _truncated(what: str, need: int, have: int) -> TruncatedError:
    return TruncatedError(f"{what} declares {need} bytes but only {have} remain")


def _write_tags(out: bytearray, known: list[tuple[int, bytes]], unknown: tuple[tuple[int, bytes], ...]) -> None:
    """Write a tag buffer: known and preserved-unknown tags, ascending, no duplicates."""
    tags = sorted([*known, *unknown], key=lambda item: item[0])
    for previous, current in itertools.pairwise(tags):
        if previous[0] == current[0]:
            raise EncodeError(f"tag {current[0]} appears twice in a tag buffer")
    out += uvarint(len(tags))
    for tag, data in tags:
        out += uvarint(tag)
        out += uvarint(len(data))
        out += data


def _write_known_tags(out: bytearray, known: list[tuple[int, bytes]]) -> None:
    """Write a tag buffer of declared tags only, already ascending (the common case)."""
    if len(known) < 0x80:
        out.append(len(known))
    else:
        out += uvarint(len(known))
    for tag, data in known:
        if tag < 0x80:
            out.append(tag)
        else:
            out += uvarint(tag)
        if len(data) < 0x80:
            out.append(len(data))
        else:
            out += uvarint(len(data))
        out += data
