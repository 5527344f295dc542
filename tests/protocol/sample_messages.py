"""Synthetic messages that exercise every wire type and version rule of the codec (test-only).

Kafka's own messages use only part of the type system; these cover the rest: FLOAT64,
UINT32, BYTES, nullable arrays, arrays of strings, uuids and bools, fields that come and go
with versions, and tagged fields of every shape. Versions 0-1 are non-flexible, 2-3 flexible.
"""

import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

from protocol.spec import (
    ARRAY,
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UINT32,
    UUID,
    ZERO_UUID,
    Api,
    Data,
    F,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleLeaf(Data):
    id: Annotated[int, F(INT32)] = 0
    label: Annotated[str | None, F(STRING, nullable="1+")] = ""
    added_in_3: Annotated[int, F(INT64, "3+", ignorable=True)] = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleItem(Data):
    name: Annotated[str, F(STRING)] = ""
    leaves: Annotated[tuple[SampleLeaf, ...], F(ARRAY(SampleLeaf))] = ()
    weight: Annotated[float, F(FLOAT64)] = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class SampleMessage(Data):
    API: ClassVar[Api] = Api.of(9999, "request", valid="0-3", flexible="2+")
    flag: Annotated[bool, F(BOOL)] = False
    tiny: Annotated[int, F(INT8)] = 0
    small: Annotated[int, F(INT16)] = 0
    medium: Annotated[int, F(INT32)] = 0
    large: Annotated[int, F(INT64)] = 0
    port: Annotated[int, F(UINT16)] = 0
    count: Annotated[int, F(UINT32)] = 0
    ratio: Annotated[float, F(FLOAT64)] = 0.0
    ident: Annotated[uuid.UUID, F(UUID)] = ZERO_UUID
    text: Annotated[str, F(STRING)] = ""
    maybe_text: Annotated[str | None, F(STRING, nullable="0+")] = None
    blob: Annotated[bytes, F(BYTES)] = b""
    maybe_blob: Annotated[bytes | None, F(BYTES, nullable="0+")] = None
    numbers: Annotated[tuple[int, ...], F(ARRAY(INT32))] = ()
    maybe_longs: Annotated[tuple[int, ...] | None, F(ARRAY(INT64), nullable="1+")] = ()
    words: Annotated[tuple[str, ...], F(ARRAY(STRING))] = ()
    idents: Annotated[tuple[uuid.UUID, ...], F(ARRAY(UUID))] = ()
    switches: Annotated[tuple[bool, ...], F(ARRAY(BOOL))] = ()
    items: Annotated[tuple[SampleItem, ...], F(ARRAY(SampleItem))] = ()
    only_v1_plus: Annotated[int, F(INT16, "1+")] = 0
    only_v0_v1: Annotated[str, F(STRING, "0-1", ignorable=True)] = ""
    strict_v0: Annotated[int, F(INT32, "0")] = 0
    tagged_int: Annotated[int, F(INT32, "2+", tag=0)] = -1
    tagged_leaves: Annotated[tuple[SampleLeaf, ...], F(ARRAY(SampleLeaf), "2+", tag=3)] = ()
    tagged_text: Annotated[str | None, F(STRING, "3+", nullable="3+", tag=5)] = None
