"""Code emission helpers shared by the construct classes (see `protocol.constructs`).

`Emitter` collects the lines of one generated function and its module-level constants; the
helpers here emit the small recurring pieces (unsigned varints) and turn defaults into source.
"""

from __future__ import annotations

import dataclasses
import io
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from construct.core import stream_read

from .primitives import read_uvarint


def read_stream_uvarint(stream: io.IOBase, path: str) -> int:
    raw = bytearray()
    while True:
        raw += stream_read(stream, 1, path)
        if raw[-1] < 0x80 or len(raw) >= 5:
            break
    value, _ = read_uvarint(bytes(raw), 0)
    return value


def literal(value: Any) -> str:
    """Python source that evaluates to `value` inside a compiled module."""
    if isinstance(value, uuid.UUID):
        return f"_UUID({str(value)!r})"
    if isinstance(value, tuple) and not value:
        return "()"
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return repr(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # a single struct's default (tagged ones: FetchSnapshotResponse's CurrentLeader, FetchResponse's
        # DivergingEpoch), rebuilt by its constructor; the tag is written when the value differs from it
        cls = type(value)
        args = ", ".join(f"{info.name}={literal(getattr(value, info.name))}" for info in dataclasses.fields(value))
        return f"_load({cls.__module__!r}, {cls.__qualname__!r})({args})"
    raise TypeError(f"no literal for default {value!r}")


def emit_uvarint(em: Emitter, target: str) -> None:
    """Read an unsigned varint into `target`: one-byte values inline, longer ones by call."""
    em.line(f"{target} = buf[pos]")
    with em.block(f"if {target} < 128:"):
        em.line("pos += 1")
    with em.block("else:"):
        em.line(f"{target}, pos = _read_uvarint(buf, pos)")


class Emitter:
    """Accumulates the lines of one generated function plus its module-level constants."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.lines: list[str] = []
        self.depth = 1
        self.counter = 0
        self.constants: dict[str, str] = {}

    def line(self, text: str) -> None:
        self.lines.append("    " * self.depth + text)

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, source: str) -> str:
        if source not in self.constants:
            self.constants[source] = f"_{self.prefix}_c{len(self.constants)}"
        return self.constants[source]

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        self.line(header)
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1
