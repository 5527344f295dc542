"""Hypothesis strategies that draw valid messages of any described class at any version.

Driven by the same descriptions as the codec: a field absent from the version keeps its
default, a field nullable in the version may be None, tagged fields may keep their default
(and are then not written). Unknown tags are drawn for flexible versions when asked.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import strategies as st

from protocol.spec import (
    BOOL,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    UINT16,
    UINT32,
    UUID,
    Array,
    Bytes,
    Data,
    Fixed,
    Str,
    Struct,
    fields_of,
)

_INTS = {
    INT8.name: (-(2**7), 2**7 - 1),
    INT16.name: (-(2**15), 2**15 - 1),
    INT32.name: (-(2**31), 2**31 - 1),
    INT64.name: (-(2**63), 2**63 - 1),
    UINT16.name: (0, 2**16 - 1),
    UINT32.name: (0, 2**32 - 1),
}


def _wire(wire: Any, version: int, flexible: bool, nullable: bool, unknown_tags: bool) -> st.SearchStrategy[Any]:
    if isinstance(wire, Fixed):
        if wire is BOOL:
            base: st.SearchStrategy[Any] = st.booleans()
        elif wire is UUID:
            base = st.uuids()
        elif wire is FLOAT64:
            base = st.floats(allow_nan=False)
        else:
            low, high = _INTS[wire.name]
            base = st.integers(low, high)
    elif isinstance(wire, Str):
        base = st.text(max_size=20)
    elif isinstance(wire, Bytes):
        base = st.binary(max_size=20)
    elif isinstance(wire, Array):
        element = wire.element
        inner = (
            messages(element, version, flexible=flexible, unknown_tags=unknown_tags)
            if isinstance(element, type)
            else _wire(element, version, flexible, False, unknown_tags)
        )
        base = st.lists(inner, max_size=4).map(tuple)
    elif isinstance(wire, Struct):
        base = messages(wire.cls, version, flexible=flexible, unknown_tags=unknown_tags)
    else:
        raise TypeError(wire)
    return st.one_of(st.none(), base) if nullable else base


def messages(
    cls: type[Data], version: int, *, flexible: bool | None = None, unknown_tags: bool = False
) -> st.SearchStrategy[Any]:
    """Valid instances of `cls` at `version` (a top-level class knows its flexible versions)."""
    if flexible is None:
        flexible = version in cls.API.flexible
    kwargs: dict[str, st.SearchStrategy[Any]] = {}
    for info in fields_of(cls):
        spec = info.spec
        if version not in spec.versions:
            continue
        kwargs[info.name] = _wire(spec.wire, version, flexible, version in spec.nullable, unknown_tags)
    if flexible and unknown_tags:
        known = {info.spec.tag for info in fields_of(cls) if info.spec.tag is not None}
        tag_numbers = st.integers(0, 300).filter(lambda tag: tag not in known)
        kwargs["unknown_tags"] = st.dictionaries(tag_numbers, st.binary(max_size=8), max_size=3).map(
            lambda found: tuple(sorted(found.items()))
        )
    return st.builds(cls, **kwargs)


def with_defaults_outside(message: Data, version: int) -> Data:
    """The message with every field absent from `version` reset to its default."""
    changes = {info.name: info.default for info in fields_of(type(message)) if version not in info.spec.versions}
    return dataclasses.replace(message, **changes)
