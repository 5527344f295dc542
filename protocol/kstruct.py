"""`KStruct`: one message class at one version, as a construct with compiled straight-line code.

Interpreted, it walks its members over a stream like any construct. Compiled (construct's own
`Construct.compile()`), `_emitparse`/`_emitbuild` emit one flat function per message version:
one `struct` unpack per run of fixed-width fields, nested structs inlined into their loops, the
dataclass filled through its slot setters. See `protocol.constructs` for the member types.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterator
from typing import Any

import construct
from construct.core import CodeGen, SizeofError, stream_read, stream_write

from ._emit import Emitter, emit_uvarint, literal, read_stream_uvarint
from .constructs import KFixed, KMember
from .errors import DecodeError, EncodeError
from .spec import UUID, Data, FieldInfo, fields_of

_PRELUDE = """
from protocol._runtime import *
"""


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
        for _ in range(read_stream_uvarint(stream, path)):
            tag = read_stream_uvarint(stream, path)
            data = stream_read(stream, read_stream_uvarint(stream, path), path)
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
    def _runs(self) -> Iterator[tuple[list[tuple[FieldInfo, KFixed]], tuple[FieldInfo, KMember | KStruct]]]:
        """The members in order: each run of fixed-width ones together (read or written with one
        struct call), then (with an empty run) each variable-width one on its own."""
        run: list[tuple[FieldInfo, KFixed]] = []
        for info, member in self.members:
            if isinstance(member, KFixed):
                run.append((info, member))
                continue
            if run:
                yield run, run[-1]
                run = []
            yield [], (info, member)
        if run:
            yield run, run[-1]

    def emit_decode(self, em: Emitter, target: str) -> None:
        values: list[tuple[str, str]] = []
        for run, (info, member) in self._runs():
            if run:
                self._emit_fixed_run_decode(em, run, values)
                continue
            var = em.name("v")
            member.emit_decode(em, var)
            values.append((info.name, var))
        if self.flexible:
            self._emit_tags_decode(em, values)
        self._emit_construct(em, target, values)

    def _emit_construct(self, em: Emitter, target: str, values: list[tuple[str, str]]) -> None:
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
                assigned[info.name] = em.const(literal(info.default))
        assigned.setdefault("unknown_tags", "()")
        em.line(f"{target} = _new({cls})")
        for name, var in assigned.items():
            em.line(f"{em.const(f'_setter({module!r}, {qualname!r}, {name!r})')}({target}, {var})")

    def _emit_fixed_run_decode(
        self, em: Emitter, run: list[tuple[FieldInfo, KFixed]], values: list[tuple[str, str]]
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

    def _emit_tags_decode(self, em: Emitter, values: list[tuple[str, str]]) -> None:
        tag_vars = []
        for info, _ in self.tagged:
            var = em.name("t")
            em.line(f"{var} = {em.const(literal(info.default))}")
            tag_vars.append(var)
        unknown = em.name("ut")
        with em.block("if buf[pos] == 0:"):
            em.line("pos += 1")
            em.line(f"{unknown} = ()")
        with em.block("else:"):
            found, count, tag, size, end = (em.name(p) for p in ("found", "NT", "tag", "S", "TE"))
            em.line(f"{found} = []")
            emit_uvarint(em, count)
            with em.block(f"for _ in range({count}):"):
                emit_uvarint(em, tag)
                emit_uvarint(em, size)
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

    def emit_encode(self, em: Emitter, value: str, what: str) -> None:
        for info in self.absent:
            if not info.spec.ignorable:
                default = em.const(literal(info.default))
                em.line(
                    f"if {value}.{info.name} != {default}: raise EncodeError("
                    f"'{self.cls.__name__}.{info.name} is not in version {self.version}')"
                )
        for run, (info, member) in self._runs():
            if run:
                fmt = ">" + "".join(fixed.wire.fmt for _, fixed in run)
                args = ", ".join(
                    f"{value}.{field.name}.int.to_bytes(16, 'big')" if fixed.wire is UUID else f"{value}.{field.name}"
                    for field, fixed in run
                )
                em.line(f"out += {em.const(f'_Struct({fmt!r})')}.pack({args})")
                continue
            var = em.name("f")
            em.line(f"{var} = {value}.{info.name}")
            member.emit_encode(em, var, f"{self.cls.__name__}.{info.name}")
        if self.flexible:
            self._emit_tags_encode(em, value)

    def _emit_tags_encode(self, em: Emitter, value: str) -> None:
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
            with em.block(f"if {var} != {em.const(literal(info.default))}:"):
                em.line(f"{saved} = out")
                em.line("out = bytearray()")
                member.emit_encode(em, var, f"{self.cls.__name__}.{info.name}")
                em.line(f"{known}.append(({info.spec.tag}, bytes(out)))")
                em.line(f"out = {saved}")
        with em.block(f"if {value}.unknown_tags:"):
            em.line(f"_write_tags(out, {known}, {value}.unknown_tags)")
        with em.block(f"elif {known}:"):  # already in tag order: no sorting, no duplicate check
            em.line(f"_write_known_tags(out, {known})")
        with em.block("else:"):
            em.line("out.append(0)")

    def _emitparse(self, code: CodeGen) -> str:
        em = Emitter(f"d_{self.function_prefix}")
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
        em = Emitter(f"e_{self.function_prefix}")
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
    def _emit_function(code: CodeGen, em: Emitter, header: str) -> None:
        consts = "".join(f"{name} = {source}\n" for source, name in em.constants.items())
        code.append(_PRELUDE)
        body = "\n".join(em.lines) if em.lines else "    pass"  # a version with no wire fields
        code.append(consts + header + "\n" + body + "\n")
