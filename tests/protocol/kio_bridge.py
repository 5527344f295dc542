"""Converts between fencer's messages and kio 0.5.0's, field by field (test-only).

kio is an independent implementation of the Kafka protocol; the conformance tests use it as
the byte-level oracle. Differences in representation handled here:
- kio names `ThrottleTimeMs` `throttle_time` (a `timedelta`); fencer keeps Kafka's `_ms` int;
- kio represents the all-zero UUID as `None`; fencer keeps `ZERO_UUID`;
- kio uses its `ErrorCode` enum for error codes; fencer keeps ints;
- kio types `records` fields as its `Records` (a bytes subclass, equal to the same bytes);
  fencer keeps plain bytes. Hypothesis cannot draw a `Records` by itself: registered below.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import uuid
from typing import Any

from hypothesis import strategies as st
from kio.index import load_payload_module
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType
from kio.static.primitive import Records

from protocol.spec import Array, Data, Struct, fields_of

ZERO_UUID = uuid.UUID(int=0)

st.register_type_strategy(Records, st.binary(max_size=64).map(Records))


#: (api key, version) that fencer speaks and kio 0.5.0 (Kafka 3.x) predates: Kafka 4.0's Vote v2
#: (KIP-996's pre-vote). Their frames are checked against bytes written by hand from Kafka 4.0's
#: schema only (tests/protocol/messages/test_vote.py), and by the round-trip property tests.
NEWER_THAN_KIO = frozenset({(52, 2)})


def kio_payload_class(api_key: int, version: int, kind: str) -> type | None:
    """kio's class for (api key, version, request|response), or None if kio lacks it."""
    entity = EntityType.request if kind == "request" else EntityType.response
    try:
        module = load_payload_module(api_key, version, entity)
    except Exception:
        return None
    for value in vars(module).values():
        if (
            isinstance(value, type)
            and dataclasses.is_dataclass(value)
            and value.__module__ == module.__name__
            and getattr(value, "__type__", None) == entity
        ):
            return value
    return None


def kio_encode(kio_cls: type, obj: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(kio_cls)(buffer, obj)
    return buffer.getvalue()


def kio_decode(kio_cls: type, data: bytes) -> Any:
    obj, size = entity_reader(kio_cls)(data, 0)
    assert size == len(data), f"kio consumed {size} of {len(data)} bytes"
    return obj


def _kind(kio_field: dataclasses.Field[Any]) -> str:
    return str(kio_field.metadata.get("kafka_type", ""))


def _our_name(kio_field: dataclasses.Field[Any], ours: dict[str, Any]) -> str:
    if kio_field.name in ours:
        return kio_field.name
    if _kind(kio_field).startswith("timedelta") and f"{kio_field.name}_ms" in ours:
        return f"{kio_field.name}_ms"
    raise KeyError(f"no fencer field for kio field {kio_field.name!r} (have {sorted(ours)})")


def _element_class(our_cls: type[Data], name: str) -> type[Data] | None:
    for info in fields_of(our_cls):
        if info.name == name and isinstance(info.spec.wire, Array) and isinstance(info.spec.wire.element, type):
            return info.spec.wire.element
    return None


def _struct_class(our_cls: type[Data], name: str) -> type[Data] | None:
    """The class of a single nested struct field (`STRUCT(...)`), None for any other field."""
    for info in fields_of(our_cls):
        if info.name == name and isinstance(info.spec.wire, Struct):
            return info.spec.wire.cls
    return None


def _nested_kio_class(kio_cls: type, kio_field: dataclasses.Field[Any]) -> type:
    """The element class of a kio field typed `tuple[X, ...]` (or `tuple[X, ...] | None`)."""
    import types
    import typing

    hint = typing.get_type_hints(kio_cls)[kio_field.name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(arg for arg in typing.get_args(hint) if arg is not type(None))
    args = typing.get_args(hint)
    return args[0] if args else hint  # type: ignore[no-any-return]


def to_kio(ours: Data, kio_cls: type) -> Any:
    """fencer message -> the equal kio message."""
    our_fields = {info.name: info for info in fields_of(type(ours))}
    kwargs: dict[str, Any] = {}
    for kio_field in dataclasses.fields(kio_cls):
        name = _our_name(kio_field, our_fields)
        value = getattr(ours, name)
        kwargs[kio_field.name] = _value_to_kio(value, kio_field, kio_cls, type(ours), name)
    return kio_cls(**kwargs)


def _value_to_kio(value: Any, kio_field: dataclasses.Field[Any], kio_cls: type, our_cls: type[Data], name: str) -> Any:
    kind = _kind(kio_field)
    if _struct_class(our_cls, name) is not None:
        return to_kio(value, _nested_kio_class(kio_cls, kio_field))
    element = _element_class(our_cls, name)
    if element is not None:
        if value is None:
            return None
        nested = _nested_kio_class(kio_cls, kio_field)
        return tuple(to_kio(item, nested) for item in value)
    if kind.startswith("timedelta"):
        return datetime.timedelta(milliseconds=value)
    if kind == "error_code":
        return KioErrorCode(value)
    if kind == "uuid":
        if isinstance(value, tuple):
            return tuple(None if item == ZERO_UUID else item for item in value)
        return None if value == ZERO_UUID else value
    return value


def from_kio(kobj: Any, our_cls: type[Data]) -> Data:
    """kio message -> the equal fencer message."""
    our_fields = {info.name: info for info in fields_of(our_cls)}
    kwargs: dict[str, Any] = {}
    for kio_field in dataclasses.fields(type(kobj)):
        name = _our_name(kio_field, our_fields)
        value = getattr(kobj, kio_field.name)
        kind = _kind(kio_field)
        element = _element_class(our_cls, name)
        struct_cls = _struct_class(our_cls, name)
        if struct_cls is not None:
            value = from_kio(value, struct_cls)
        elif element is not None:
            value = None if value is None else tuple(from_kio(item, element) for item in value)
        elif kind.startswith("timedelta"):
            value = value // datetime.timedelta(milliseconds=1)
        elif kind == "error_code":
            value = int(value)
        elif kind == "uuid":
            if isinstance(value, tuple):
                value = tuple(ZERO_UUID if item is None else item for item in value)
            else:
                value = ZERO_UUID if value is None else value
        elif isinstance(value, int) and not isinstance(value, bool):
            value = int(value)
        elif isinstance(value, bytes):
            value = bytes(value)  # a kio `Records` becomes plain bytes
        kwargs[name] = value
    return our_cls(**kwargs)
