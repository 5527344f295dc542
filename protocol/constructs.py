"""construct classes for Kafka's wire types, with compiled straight-line parsers and builders.

`KStruct` is a construct made of `KFixed`, `KString`, `KBytes`, `KArray` and nested `KStruct`
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
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import construct
from construct.core import CodeGen, SizeofError, stream_read, stream_write

from .errors import DecodeError, EncodeError
from .primitives import read_uvarint, uvarint
from .spec import UUID, Data, FieldInfo, Fixed, fields_of

_PRELUDE = """
from protocol._runtime import *
"""

# ----------------------------------------------------------------------------- stream helpers


def _read_stream_uvarint(stream: io.IOBase, path: str) -> int:
    raw = bytearray()
    while True:
        raw += stream_read(stream, 1, path)
        if raw[-1] < 0x80 or len(raw) >= 5:
            break
    value, _ = read_uvarint(bytes(raw), 0)
    return value


def _literal(value: Any) -> str:
    """Python source that evaluates to `value` inside a compiled module."""
    if isinstance(value, uuid.UUID):
        return f"_UUID({str(value)!r})"
    if isinstance(value, tuple) and not value:
        return "()"
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return repr(value)
    raise TypeError(f"no literal for default {value!r}")


def _emit_uvarint(em: _Emitter, target: str) -> None:
    """Read an unsigned varint into `target`: one-byte values inline, longer ones by call."""
    em.line(f"{target} = buf[pos]")
    with em.block(f"if {target} < 128:"):
        em.line("pos += 1")
    with em.block("else:"):
        em.line(f"{target}, pos = _read_uvarint(buf, pos)")


class _Emitter:
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


# ----------------------------------------------------------------------------- member constructs


class KMember(construct.Construct):  # type: ignore[misc]
    """A Kafka wire value inside a `KStruct`."""

    min_size: int = 1

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("Kafka values have variable size", path=path)

    def emit_decode(self, em: _Emitter, target: str) -> None:
        raise NotImplementedError

    def emit_encode(self, em: _Emitter, value: str, what: str) -> None:
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
    def emit_decode(self, em: _Emitter, target: str) -> None:
        em.line(f"{target}, = {em.const(f'_Struct({self._struct.format!r})')}.unpack_from(buf, pos)")
        em.line(f"pos += {self.wire.size}")
        if self.wire is UUID:
            em.line(f"{target} = _uuid_from({target})")

    def emit_encode(self, em: _Emitter, value: str, what: str) -> None:
        raw = f"{value}.bytes" if self.wire is UUID else value
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
            length = _read_stream_uvarint(stream, path) - 1
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
    def emit_length(self, em: _Emitter, target: str, what: str) -> str:
        """Emit reading the length into a new variable; open an `else:` holding the non-null case.

        Returns the variable; the caller emits the value inside the current (indented) block
        and must call `em.depth -= 1` afterwards.
        """
        length = em.name("L")
        if self.compact:
            _emit_uvarint(em, length)
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

    def emit_write_length(self, em: _Emitter, value: str, what: str) -> str:
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

    def emit_decode(self, em: _Emitter, target: str) -> None:
        what = "string" if self.text else "bytes"
        length = self.emit_length(em, target, what)
        end = em.name("E")
        em.line(f"{end} = pos + {length}")
        em.line(f"if {end} > n: raise _truncated('{what}', {length}, n - pos)")
        em.line(f"{target} = buf[pos:{end}]{'.decode()' if self.text else ''}")
        em.line(f"pos = {end}")
        em.depth -= 1

    def emit_encode(self, em: _Emitter, value: str, what: str) -> None:
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

    def emit_decode(self, em: _Emitter, target: str) -> None:
        count = self.emit_length(em, target, "array")
        element = self.element
        em.line(f"if {count} * {element.min_size} > n - pos: raise _truncated('array', {count}, n - pos)")
        if isinstance(element, KFixed) and element.wire is UUID:
            em.line(f"{target} = tuple([_uuid_from(buf[p:p + 16]) for p in range(pos, pos + 16 * {count}, 16)])")
            em.line(f"pos += 16 * {count}")
        elif isinstance(element, KFixed):
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

    def emit_encode(self, em: _Emitter, value: str, what: str) -> None:
        count = self.emit_write_length(em, value, what)
        element = self.element
        if isinstance(element, KFixed) and element.wire is UUID:
            item = em.name("u")
            with em.block(f"for {item} in {value}:"):
                em.line(f"out += {item}.bytes")
        elif isinstance(element, KFixed):
            em.line(f"out += _pack('>%d{element.wire.fmt}' % {count}, *{value})")
        else:
            item = em.name("item")
            with em.block(f"for {item} in {value}:"):
                element.emit_encode(em, item, what)
        em.depth -= 1


# ----------------------------------------------------------------------------- structs


class KStruct(construct.Construct):  # type: ignore[misc]
    """One message class at one version: its members in order, then (flexible) its tag buffer."""

    def __init__(
        self,
        cls: type[Data],
        version: int,
        flexible: bool,
        members: list[tuple[FieldInfo, KMember | KStruct]],
        tagged: list[tuple[FieldInfo, KMember | KStruct]],
        absent: list[FieldInfo],
    ) -> None:
        super().__init__()
        self.cls = cls
        self.version = version
        self.flexible = flexible
        self.members = members
        self.tagged = tagged
        self.absent = absent
        self.min_size: int = sum(member.min_size for _, member in members) + (1 if flexible else 0)
        self.function_prefix = f"{cls.__name__}_v{version}"

    def _sizeof(self, context: Any, path: str) -> int:
        raise SizeofError("Kafka messages have variable size", path=path)

    # ------------------------------------------------------------------ interpreted path
    def _parse(self, stream: io.IOBase, context: Any, path: str) -> Any:
        values = {info.name: member._parse(stream, context, path) for info, member in self.members}
        if not self.flexible:
            return self.cls(**values)
        unknown: list[tuple[int, bytes]] = []
        for _ in range(_read_stream_uvarint(stream, path)):
            tag = _read_stream_uvarint(stream, path)
            data = stream_read(stream, _read_stream_uvarint(stream, path), path)
            known = [(info, member) for info, member in self.tagged if info.spec.tag == tag]
            if not known:
                unknown.append((tag, data))
                continue
            sub = io.BytesIO(data)
            values[known[0][0].name] = known[0][1]._parse(sub, context, path)
            if sub.tell() != len(data):
                raise DecodeError(f"tagged field {tag} has {len(data) - sub.tell()} extra bytes")
        return self.cls(**values, unknown_tags=tuple(unknown))

    def _build(self, obj: Any, stream: io.IOBase, context: Any, path: str) -> Any:
        self._check_absent(obj)
        for info, member in self.members:
            member._build(getattr(obj, info.name), stream, context, path)
        if self.flexible:
            known: list[tuple[int, bytes]] = []
            for info, member in self.tagged:
                value = getattr(obj, info.name)
                if value != info.default:
                    sub = io.BytesIO()
                    member._build(value, sub, context, path)
                    known.append((info.spec.tag or 0, sub.getvalue()))
            out = bytearray()
            from ._runtime import _write_tags

            _write_tags(out, known, obj.unknown_tags)
            stream_write(stream, bytes(out), len(out), path)
        return obj

    def _check_absent(self, obj: Any) -> None:
        for info in self.absent:
            if getattr(obj, info.name) != info.default and not info.spec.ignorable:
                raise EncodeError(
                    f"{self.cls.__name__}.{info.name} is not in version {self.version} "
                    f"and must keep its default {info.default!r}"
                )

    # ------------------------------------------------------------------ compiled path
    def emit_decode(self, em: _Emitter, target: str) -> None:
        values: list[tuple[str, str]] = []
        index = 0
        while index < len(self.members):
            run: list[tuple[FieldInfo, KFixed]] = []
            while index < len(self.members) and isinstance(self.members[index][1], KFixed):
                info, member = self.members[index]
                assert isinstance(member, KFixed)
                run.append((info, member))
                index += 1
            if run:
                self._emit_fixed_run_decode(em, run, values)
                continue
            info, member = self.members[index]
            index += 1
            var = em.name("v")
            member.emit_decode(em, var)
            values.append((info.name, var))
        if self.flexible:
            self._emit_tags_decode(em, values)
        self._emit_construct(em, target, values)

    def _emit_construct(self, em: _Emitter, target: str, values: list[tuple[str, str]]) -> None:
        """Build the dataclass: `object.__new__` and the slot setters, not the frozen `__init__`.

        A frozen dataclass's `__init__` does exactly this through `object.__setattr__`, three
        times slower; every field is set, the absent ones to their defaults. Classes with a
        `__post_init__` keep the ordinary constructor.
        """
        module, qualname = self.cls.__module__, self.cls.__qualname__
        cls = em.const(f"_load({module!r}, {qualname!r})")
        if hasattr(self.cls, "__post_init__"):
            args = ", ".join(f"{name}={var}" for name, var in values)
            em.line(f"{target} = {cls}({args})")
            return
        assigned = dict(values)
        for info in fields_of(self.cls):
            if info.name not in assigned:
                assigned[info.name] = em.const(_literal(info.default))
        assigned.setdefault("unknown_tags", "()")
        em.line(f"{target} = _new({cls})")
        for name, var in assigned.items():
            em.line(f"{em.const(f'_setter({module!r}, {qualname!r}, {name!r})')}({target}, {var})")

    def _emit_fixed_run_decode(
        self, em: _Emitter, run: list[tuple[FieldInfo, KFixed]], values: list[tuple[str, str]]
    ) -> None:
        fmt = ">" + "".join(member.wire.fmt for _, member in run)
        size = struct.calcsize(fmt)
        names = [em.name("v") for _ in run]
        em.line(f"{', '.join(names)}, = {em.const(f'_Struct({fmt!r})')}.unpack_from(buf, pos)")
        em.line(f"pos += {size}")
        for name, (info, member) in zip(names, run, strict=True):
            if member.wire is UUID:
                em.line(f"{name} = _uuid_from({name})")
            values.append((info.name, name))

    def _emit_tags_decode(self, em: _Emitter, values: list[tuple[str, str]]) -> None:
        tag_vars = []
        for info, _ in self.tagged:
            var = em.name("t")
            em.line(f"{var} = {em.const(_literal(info.default))}")
            tag_vars.append(var)
        unknown = em.name("ut")
        with em.block("if buf[pos] == 0:"):
            em.line("pos += 1")
            em.line(f"{unknown} = ()")
        with em.block("else:"):
            found, count, tag, size, end = (em.name(p) for p in ("found", "NT", "tag", "S", "TE"))
            em.line(f"{found} = []")
            _emit_uvarint(em, count)
            with em.block(f"for _ in range({count}):"):
                _emit_uvarint(em, tag)
                _emit_uvarint(em, size)
                em.line(f"{end} = pos + {size}")
                em.line(f"if {end} > n: raise _truncated('tagged field', {size}, n - pos)")
                keyword = "if"
                for (info, member), var in zip(self.tagged, tag_vars, strict=True):
                    with em.block(f"{keyword} {tag} == {info.spec.tag}:"):
                        member.emit_decode(em, var)
                        em.line(f"if pos != {end}: raise DecodeError('tagged field {info.spec.tag} size mismatch')")
                    keyword = "elif"
                with em.block("else:" if self.tagged else "if True:"):
                    em.line(f"{found}.append(({tag}, buf[pos:{end}]))")
                    em.line(f"pos = {end}")
            em.line(f"{unknown} = tuple({found})")
        values.extend((info.name, var) for (info, _), var in zip(self.tagged, tag_vars, strict=True))
        values.append(("unknown_tags", unknown))

    def emit_encode(self, em: _Emitter, value: str, what: str) -> None:
        for info in self.absent:
            if not info.spec.ignorable:
                default = em.const(_literal(info.default))
                em.line(
                    f"if {value}.{info.name} != {default}: raise EncodeError("
                    f"'{self.cls.__name__}.{info.name} is not in version {self.version}')"
                )
        index = 0
        while index < len(self.members):
            run: list[tuple[FieldInfo, KFixed]] = []
            while index < len(self.members) and isinstance(self.members[index][1], KFixed):
                info, member = self.members[index]
                assert isinstance(member, KFixed)
                run.append((info, member))
                index += 1
            if run:
                fmt = ">" + "".join(member.wire.fmt for _, member in run)
                args = ", ".join(
                    f"{value}.{info.name}.bytes" if member.wire is UUID else f"{value}.{info.name}"
                    for info, member in run
                )
                em.line(f"out += {em.const(f'_Struct({fmt!r})')}.pack({args})")
                continue
            info, member = self.members[index]
            index += 1
            var = em.name("f")
            em.line(f"{var} = {value}.{info.name}")
            member.emit_encode(em, var, f"{self.cls.__name__}.{info.name}")
        if self.flexible:
            self._emit_tags_encode(em, value)

    def _emit_tags_encode(self, em: _Emitter, value: str) -> None:
        if not self.tagged:
            with em.block(f"if {value}.unknown_tags:"):
                em.line(f"_write_tags(out, [], {value}.unknown_tags)")
            with em.block("else:"):
                em.line("out.append(0)")
            return
        known = em.name("known")
        saved = em.name("saved")
        em.line(f"{known} = []")
        for info, member in self.tagged:
            var = em.name("f")
            em.line(f"{var} = {value}.{info.name}")
            with em.block(f"if {var} != {em.const(_literal(info.default))}:"):
                em.line(f"{saved} = out")
                em.line("out = bytearray()")
                member.emit_encode(em, var, f"{self.cls.__name__}.{info.name}")
                em.line(f"{known}.append(({info.spec.tag}, bytes(out)))")
                em.line(f"out = {saved}")
        with em.block(f"if {known} or {value}.unknown_tags:"):
            em.line(f"_write_tags(out, {known}, {value}.unknown_tags)")
        with em.block("else:"):
            em.line("out.append(0)")

    def _emitparse(self, code: CodeGen) -> str:
        em = _Emitter(f"d_{self.function_prefix}")
        em.line("n = len(buf)")
        self.emit_decode(em, "result")
        em.line("return result, pos")
        name = f"decode_{self.function_prefix}"
        self._emit_function(code, em, f"def {name}(buf, pos):")
        code.append(f"""
def parse_{self.function_prefix}(io, this):
    start = io.tell()
    buf = io.read()
    obj, pos = {name}(buf, 0)
    io.seek(start + pos)
    return obj
""")
        return f"parse_{self.function_prefix}(io, this)"

    def _emitbuild(self, code: CodeGen) -> str:
        em = _Emitter(f"e_{self.function_prefix}")
        self.emit_encode(em, "obj", self.cls.__name__)
        name = f"encode_{self.function_prefix}"
        self._emit_function(code, em, f"def {name}(obj, out):")
        code.append(f"""
def build_{self.function_prefix}(obj, io, this):
    out = bytearray()
    {name}(obj, out)
    io.write(out)
    return obj
""")
        return f"build_{self.function_prefix}(obj, io, this)"

    @staticmethod
    def _emit_function(code: CodeGen, em: _Emitter, header: str) -> None:
        consts = "".join(f"{name} = {source}\n" for source, name in em.constants.items())
        code.append(_PRELUDE)
        body = "\n".join(em.lines) if em.lines else "    pass"  # a version with no wire fields
        code.append(consts + header + "\n" + body + "\n")
