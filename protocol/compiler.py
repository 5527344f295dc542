"""From a message description to a compiled codec for one version.

`struct_for(cls, version)` builds the construct (`KStruct`) of a message at a version from its
dataclass description; `codec(cls, version)` compiles it once (construct's `compile()`, with
our emitters) and wraps the generated functions with the codec's error boundary: whatever the
bytes, decoding raises only `DecodeError`, and encoding only `EncodeError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .constructs import KArray, KBytes, KFixed, KMember, KString
from .errors import DecodeError, EncodeError, TrailingBytesError
from .kstruct import KStruct
from .spec import Array, Bytes, Data, FieldInfo, FieldSpec, Fixed, Str, Struct, WireType, fields_of

T = TypeVar("T", bound=Data)
Buffer = bytes | bytearray | memoryview

_DECODE_FAULTS = (struct.error, IndexError, ValueError, OverflowError, TypeError)
_ENCODE_FAULTS = (struct.error, AttributeError, TypeError, ValueError, OverflowError)


def _member(wire: WireType, spec: FieldSpec | None, version: int, flexible: bool) -> KMember | KStruct:
    compact = flexible
    if spec is not None and spec.flexible is not None:
        compact = version in spec.flexible
    nullable = spec is not None and version in spec.nullable
    if isinstance(wire, Fixed):
        return KFixed(wire)
    if isinstance(wire, Str):
        return KString(compact, nullable)
    if isinstance(wire, Bytes):
        return KBytes(compact, nullable)
    if isinstance(wire, Array):
        element = wire.element
        if isinstance(element, type):
            inner: KMember | KStruct = struct_for_nested(element, version, flexible)
        else:
            inner = _member(element, None, version, flexible)
        return KArray(inner, compact, nullable)
    if isinstance(wire, Struct):
        if nullable:
            raise TypeError(f"a nullable single struct ({wire.name}) is not supported")
        return struct_for_nested(wire.cls, version, flexible)
    raise TypeError(f"unknown wire type {wire!r}")


def _build(cls: type[Data], version: int, flexible: bool) -> KStruct:
    members: list[tuple[FieldInfo, KMember | KStruct]] = []
    tagged: list[tuple[FieldInfo, KMember | KStruct]] = []
    absent: list[FieldInfo] = []
    for info in fields_of(cls):
        spec = info.spec
        if version not in spec.versions:
            if info.required:
                raise TypeError(f"{cls.__name__}.{info.name} is absent from v{version} but has no default")
            absent.append(info)
            continue
        member = _member(spec.wire, spec, version, flexible)
        if spec.tag is not None and version in spec.tagged:
            if not flexible:
                raise TypeError(f"{cls.__name__}.{info.name} is tagged in a non-flexible version {version}")
            tagged.append((info, member))
        else:
            members.append((info, member))
    tagged.sort(key=lambda pair: pair[0].spec.tag or 0)
    return KStruct(cls, version, flexible, members, tagged, absent)


def struct_for_nested(cls: type[Data], version: int, flexible: bool) -> KStruct:
    return _build(cls, version, flexible)


def struct_for(cls: type[Data], version: int) -> KStruct:
    """The (uncompiled) construct of a top-level message class at `version`."""
    api = cls.API
    if version not in api.valid:
        raise ValueError(f"{cls.__name__} has no version {version} (valid: {api.valid})")
    return _build(cls, version, version in api.flexible)


@dataclass(frozen=True, slots=True)
class Codec(Generic[T]):
    """The compiled decoder and encoder of one message class at one version."""

    cls: type[T]
    version: int
    construct: KStruct
    compiled: Any
    _decode: Any
    _encode: Any

    def decode(self, buf: Buffer, pos: int = 0) -> tuple[T, int]:
        """Decode a message starting at `pos`; return it and the offset after it."""
        data = buf if isinstance(buf, bytes) else bytes(buf)
        try:
            message, end = self._decode(data, pos)
        except _DECODE_FAULTS as exc:
            raise DecodeError(
                f"cannot decode {self.cls.__name__} v{self.version}: {type(exc).__name__}: {exc}"
            ) from None
        return message, end

    def decode_exact(self, buf: Buffer, pos: int = 0) -> T:
        """Decode a message that must end exactly at the end of `buf`."""
        message, end = self.decode(buf, pos)
        if end != len(buf):
            raise TrailingBytesError(f"{len(buf) - end} bytes left after {self.cls.__name__} v{self.version}")
        return message

    def encode_into(self, message: T, out: bytearray) -> None:
        if not isinstance(message, self.cls):
            raise EncodeError(f"expected {self.cls.__name__}, got {type(message).__name__}")
        try:
            self._encode(message, out)
        except _ENCODE_FAULTS as exc:
            raise EncodeError(
                f"cannot encode {self.cls.__name__} v{self.version}: {type(exc).__name__}: {exc}"
            ) from None

    def encode(self, message: T) -> bytes:
        out = bytearray()
        self.encode_into(message, out)
        return bytes(out)


_CODECS: dict[tuple[type[Data], int], Codec[Any]] = {}


def codec(cls: type[T], version: int) -> Codec[T]:
    """The compiled codec of `cls` at `version` (compiled on first use, then cached)."""
    found = _CODECS.get((cls, version))
    if found is not None:
        return found
    kstruct = struct_for(cls, version)
    compiled = kstruct.compile()
    module = compiled.module
    if not hasattr(module, f"decode_{kstruct.function_prefix}"):
        # construct falls back to the interpreted path when an emitter is missing; refuse that
        raise RuntimeError(f"{cls.__name__} v{version} did not compile to straight-line code")
    made: Codec[T] = Codec(
        cls=cls,
        version=version,
        construct=kstruct,
        compiled=compiled,
        _decode=getattr(module, f"decode_{kstruct.function_prefix}"),
        _encode=getattr(module, f"encode_{kstruct.function_prefix}"),
    )
    _CODECS[(cls, version)] = made
    return made
