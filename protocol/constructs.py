"""construct classes for Kafka's wire types, with compiled straight-line parsers and builders.

`KStruct` (in `protocol.kstruct`) is a construct made of `KFixed`, `KString`, `KBytes`, `KArray` and nested `KStruct`
members, for one message class at one version. It works two ways:

- interpreted, as any construct (`parse`/`build` walk the members over a stream); the tests
  use this path as a second, simple implementation to check the compiled one against;
- compiled: `KStruct.compile()` goes through construct's own `Construct.compile()`, and
  `_emitparse`/`_emitbuild` emit one flat function per message version that reads from a
  buffer at an offset: one `struct` unpack for each run of fixed-width fields, primitive arrays
  in one unpack, nested structs inlined into their loops, and the message dataclass built
  directly (no intermediate containers, no per-struct context).

The compiled functions are `decode(buf, pos) -> (message, pos)` and `encode(message, out)`;
they may raise low-level exceptions on bad input, which `protocol.compiler` turns into
`DecodeError` / `EncodeError` at its boundary.
"""

from __future__ import annotations

import io
import struct
import uuid
from typing import TYPE_CHECKING, Any

import construct
from construct.core import SizeofError, stream_read, stream_write

from ._emit import Emitter, emit_uvarint, read_stream_uvarint
from ._runtime import _CACHED_ARRAY_LENGTH
from .errors import DecodeError, EncodeError
from .primitives import uvarint
from .spec import UUID, Fixed

if TYPE_CHECKING:
    from .kstruct import KStruct

# ----------------------------------------------------------------------------- member constructs


class KMember(construct.Construct):  # type: ignore[misc]
    """A Kafka wire value inside a `KStruct`."""

    min_size: int = 1

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("Kafka values have variable size", path=path)

    def emit_decode(self, em: Emitter, target: str) -> None:
        raise NotImplementedError

    def emit_encode(self, em: Emitter, value: str, what: str) -> None:
        raise NotImplementedError


class KFixed(KMember):
    """INT8..INT64, UINT16/32, FLOAT64, BOOLEAN, UUID."""

    def __init__(self, wire: Fixed) -> None:
        super().__init__()
        self.wire = wire
        self.min_size = wire.size
        self._struct = struct.Struct(">" + wire.fmt)

    def _parse(self, stream: io.IOBase, context: Any, path: str) -> Any:
        (value,) = self._struct.unpack(stream_read(stream, self.wire.size, path))
        return uuid.UUID(bytes=value) if self.wire is UUID else value

    def _build(self, obj: Any, stream: io.IOBase, context: Any, path: str) -> Any:
        raw = obj.bytes if self.wire is UUID else obj
        stream_write(stream, self._struct.pack(raw), self.wire.size, path)
        return obj

    # A fixed value on its own (a tagged field); runs of them in a struct are merged by KStruct.
    def emit_decode(self, em: Emitter, target: str) -> None:
        em.line(f"{target}, = {em.const(f'_Struct({self._struct.format!r})')}.unpack_from(buf, pos)")
        em.line(f"pos += {self.wire.size}")
        if self.wire is UUID:
            em.line(f"{target} = _uuid_from({target})")

    def emit_encode(self, em: Emitter, value: str, what: str) -> None:
        raw = f"{value}.int.to_bytes(16, 'big')" if self.wire is UUID else value  # `.bytes`, without its call
        em.line(f"out += {em.const(f'_Struct({self._struct.format!r})')}.pack({raw})")


class _Sized(KMember):
    """Shared length handling of strings, bytes and arrays (compact or legacy, nullable or not)."""

    legacy_fmt = ">h"

    def __init__(self, compact: bool, nullable: bool) -> None:
        super().__init__()
        self.compact = compact
        self.nullable = nullable
        self.min_size = 1 if compact else struct.calcsize(self.legacy_fmt)

    # interpreted
    def _read_length(self, stream: io.IOBase, path: str) -> int | None:
        if self.compact:
            length = read_stream_uvarint(stream, path) - 1
        else:
            (length,) = struct.unpack(self.legacy_fmt, stream_read(stream, self.min_size, path))
        if length < -1:
            raise DecodeError(f"negative length {length}")
        if length == -1:
            if not self.nullable:
                raise DecodeError("null where the field is not nullable")
            return None
        return int(length)

    def _write_length(self, length: int | None, stream: io.IOBase, path: str) -> None:
        if length is None and not self.nullable:
            raise EncodeError("None where the field is not nullable")
        raw = -1 if length is None else length
        data = uvarint(raw + 1) if self.compact else struct.pack(self.legacy_fmt, raw)
        stream_write(stream, data, len(data), path)

    # compiled
    def emit_length(self, em: Emitter, target: str, what: str) -> str:
        """Emit reading the length into a new variable; open an `else:` holding the non-null case.

        Returns the variable; the caller emits the value inside the current (indented) block
        and must call `em.depth -= 1` afterwards.
        """
        length = em.name("L")
        if self.compact:
            emit_uvarint(em, length)
            em.line(f"{length} -= 1")
        else:
            fmt = em.const(f"_Struct({self.legacy_fmt!r})")
            em.line(f"{length}, = {fmt}.unpack_from(buf, pos)")
            em.line(f"pos += {self.min_size}")
        with em.block(f"if {length} < 0:"):
            if self.nullable:
                em.line(f"if {length} != -1: raise DecodeError('negative length in {what}')")
                em.line(f"{target} = None")
            else:
                em.line(f"raise DecodeError('null or negative length in non-nullable {what}')")
        em.line("else:")
        em.depth += 1
        return length

    def emit_write_length(self, em: Emitter, value: str, what: str) -> str:
        """Emit writing `len(value)` (or null); opens an `else:` for the non-null case."""
        if self.nullable:
            null = b"\x00" if self.compact else struct.pack(self.legacy_fmt, -1)
            with em.block(f"if {value} is None:"):
                em.line(f"out += {null!r}")
        else:
            with em.block(f"if {value} is None:"):
                em.line(f"raise EncodeError('{what} is not nullable at this version')")
        em.line("else:")
        em.depth += 1
        length = em.name("N")
        em.line(f"{length} = len({value})")
        if self.compact:
            em.line(f"if {length} < 127: out.append({length} + 1)")
            em.line(f"else: out += _uvarint({length} + 1)")
        else:
            limit = (1 << (8 * self.min_size - 1)) - 1
            em.line(f"if {length} > {limit}: raise EncodeError('{what} is too long')")
            em.line(f"out += {em.const(f'_Struct({self.legacy_fmt!r})')}.pack({length})")
        return length


class KString(_Sized):
    """STRING, NULLABLE_STRING and their COMPACT forms (UTF-8)."""

    text = True

    def _parse(self, stream: io.IOBase, context: Any, path: str) -> Any:
        length = self._read_length(stream, path)
        if length is None:
            return None
        data = stream_read(stream, length, path)
        return data.decode() if self.text else data

    def _build(self, obj: Any, stream: io.IOBase, context: Any, path: str) -> Any:
        data = obj.encode() if (self.text and obj is not None) else obj
        self._write_length(None if data is None else len(data), stream, path)
        if data:
            stream_write(stream, data, len(data), path)
        return obj

    def emit_decode(self, em: Emitter, target: str) -> None:
        what = "string" if self.text else "bytes"
        length = self.emit_length(em, target, what)
        end = em.name("E")
        em.line(f"{end} = pos + {length}")
        em.line(f"if {end} > n: raise _truncated('{what}', {length}, n - pos)")
        em.line(f"{target} = buf[pos:{end}]{'.decode()' if self.text else ''}")
        em.line(f"pos = {end}")
        em.depth -= 1

    def emit_encode(self, em: Emitter, value: str, what: str) -> None:
        if self.text:
            raw = em.name("b")
            em.line(f"{raw} = None if {value} is None else {value}.encode()")
        else:
            raw = value
        self.emit_write_length(em, raw, what)
        em.line(f"out += {raw}")
        em.depth -= 1


class KBytes(KString):
    """BYTES, NULLABLE_BYTES and their COMPACT forms (INT32 length when not compact)."""

    text = False
    legacy_fmt = ">i"


class KArray(_Sized):
    """ARRAY / COMPACT_ARRAY (INT32 length, -1 null; or uvarint N+1, 0 null)."""

    legacy_fmt = ">i"

    def __init__(self, element: KMember | KStruct, compact: bool, nullable: bool) -> None:
        super().__init__(compact, nullable)
        self.element = element

    def _parse(self, stream: io.IOBase, context: Any, path: str) -> Any:
        count = self._read_length(stream, path)
        if count is None:
            return None
        return tuple(self.element._parse(stream, context, path) for _ in range(count))

    def _build(self, obj: Any, stream: io.IOBase, context: Any, path: str) -> Any:
        self._write_length(None if obj is None else len(obj), stream, path)
        for item in obj or ():
            self.element._build(item, stream, context, path)
        return obj

    def emit_decode(self, em: Emitter, target: str) -> None:
        count = self.emit_length(em, target, "array")
        element = self.element
        em.line(f"if {count} * {element.min_size} > n - pos: raise _truncated('array', {count}, n - pos)")
        if isinstance(element, KFixed) and element.wire is UUID:
            em.line(f"{target} = _uuid_array(buf, pos, {count})")
            em.line(f"pos += 16 * {count}")
        elif isinstance(element, KFixed):
            structs = em.const(f"_array_structs({element.wire.fmt!r})")
            with em.block(f"if {count} < {_CACHED_ARRAY_LENGTH}:"):
                em.line(f"{target} = {structs}[{count}].unpack_from(buf, pos)")
            with em.block("else:"):
                em.line(f"{target} = _unpack_from('>%d{element.wire.fmt}' % {count}, buf, pos)")
            em.line(f"pos += {element.wire.size} * {count}")
        else:
            items = em.name("items")
            item = em.name("item")
            em.line(f"{items} = []")
            with em.block(f"for _ in range({count}):"):
                element.emit_decode(em, item)
                em.line(f"{items}.append({item})")
            em.line(f"{target} = tuple({items})")
        em.depth -= 1

    def emit_encode(self, em: Emitter, value: str, what: str) -> None:
        count = self.emit_write_length(em, value, what)
        element = self.element
        if isinstance(element, KFixed) and element.wire is UUID:
            em.line(f"out += _uuid_array_bytes({value})")
        elif isinstance(element, KFixed):
            structs = em.const(f"_array_structs({element.wire.fmt!r})")
            with em.block(f"if {count} < {_CACHED_ARRAY_LENGTH}:"):
                em.line(f"out += {structs}[{count}].pack(*{value})")
            with em.block("else:"):
                em.line(f"out += _pack('>%d{element.wire.fmt}' % {count}, *{value})")
        else:
            item = em.name("item")
            with em.block(f"for {item} in {value}:"):
                element.emit_encode(em, item, what)
        em.depth -= 1
