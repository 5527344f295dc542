"""The one description of every message: dataclasses whose fields carry their wire spec.

A message (or nested struct) is a frozen, slotted, keyword-only dataclass deriving from
`Data`. Each field is annotated `Annotated[<python type>, F(<wire type>, <versions>, ...)]`,
which is everything the compiler needs to build the construct struct of any version:

    @dataclass(frozen=True, slots=True, kw_only=True)
    class AlterPartitionRequest(Data):
        API: ClassVar[Api] = Api.of(56, REQUEST, valid="0-3", flexible="0+")
        broker_id: Annotated[int, F(INT32)]
        topics: Annotated[tuple[TopicData, ...], F(ARRAY(TopicData))]  # (abridged)

Rules:
- One class covers all versions. A field absent from a version decodes to its default; on
  encode it must hold its default unless it is `ignorable` (Kafka's rule).
- Strings, bytes and arrays switch to their COMPACT forms in flexible versions, and every
  struct ends with a tag buffer there; `flexible="none"` on a field opts out (RequestHeader's
  client id).
- Tagged fields are written only when they differ from their default, in tag order; tags a
  reader does not know are kept in `unknown_tags` and written back.
- Nested struct classes are module-level and named after their owner
  (`AlterPartitionRequestTopicData`), so that a module can hold both directions.
"""

from __future__ import annotations

import dataclasses
import typing
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from .versions import Versions

T = TypeVar("T")

ZERO_UUID = uuid.UUID(int=0)
REQUEST: Literal["request"] = "request"
RESPONSE: Literal["response"] = "response"
HEADER: Literal["header"] = "header"
METADATA: Literal["metadata"] = "metadata"
CONTROL: Literal["control"] = "control"
UnknownTags = tuple[tuple[int, bytes], ...]


# ---------------------------------------------------------------------------- wire types
@dataclass(frozen=True, slots=True)
class Fixed:
    """A fixed-width value read with one `struct` format character (UUID: 16 bytes)."""

    name: str
    fmt: str
    size: int


@dataclass(frozen=True, slots=True)
class Str:
    """STRING / NULLABLE_STRING / COMPACT_(NULLABLE_)STRING, chosen by version."""

    name: str = "string"


@dataclass(frozen=True, slots=True)
class Bytes:
    """BYTES / NULLABLE_BYTES / COMPACT_(NULLABLE_)BYTES, chosen by version."""

    name: str = "bytes"


@dataclass(frozen=True, slots=True)
class Array:
    """ARRAY / COMPACT_ARRAY of a primitive wire type or of a nested `Data` class."""

    element: WireType | type[Data]

    @property
    def name(self) -> str:
        element = self.element
        return f"[]{element.__name__ if isinstance(element, type) else element.name}"


@dataclass(frozen=True, slots=True)
class Struct:
    """A single nested struct (not an array of them): VotersRecord's `KRaftVersionFeature`, or a
    tagged one, written only when it differs from its default (FetchSnapshotResponse's
    `CurrentLeader`). Kafka's nullable single structs are not described here."""

    cls: type[Data]

    @property
    def name(self) -> str:
        return self.cls.__name__


WireType = Fixed | Str | Bytes | Array | Struct

BOOL = Fixed("bool", "?", 1)
INT8 = Fixed("int8", "b", 1)
INT16 = Fixed("int16", "h", 2)
INT32 = Fixed("int32", "i", 4)
INT64 = Fixed("int64", "q", 8)
UINT16 = Fixed("uint16", "H", 2)
UINT32 = Fixed("uint32", "I", 4)
FLOAT64 = Fixed("float64", "d", 8)
UUID = Fixed("uuid", "16s", 16)
STRING = Str()
BYTES = Bytes()
#: Kafka's `records` type: on the wire exactly BYTES (NULLABLE_BYTES where the schema makes it
#: nullable, COMPACT_ in flexible versions), holding record batches the codec leaves unparsed.
RECORDS = Bytes("records")


def ARRAY(element: WireType | type[Data]) -> Array:
    return Array(element)


def STRUCT(cls: type[Data]) -> Struct:
    return Struct(cls)


# ---------------------------------------------------------------------------- field spec
@dataclass(frozen=True, slots=True)
class FieldSpec:
    """Where and how a field appears on the wire."""

    wire: WireType
    versions: Versions
    nullable: Versions
    tag: int | None
    tagged: Versions
    ignorable: bool
    flexible: Versions | None  # None: follow the message's flexible versions


def F(
    wire: WireType | type[Data],
    versions: str = "0+",
    *,
    nullable: str = "none",
    tag: int | None = None,
    tagged: str | None = None,
    ignorable: bool = False,
    flexible: str | None = None,
) -> FieldSpec:
    """Declare a field's wire spec (used inside `Annotated[...]`)."""
    if isinstance(wire, type):
        raise TypeError("a single nested struct is declared STRUCT(...), an array of them ARRAY(...)")
    return FieldSpec(
        wire=wire,
        versions=Versions.parse(versions),
        nullable=Versions.parse(nullable),
        tag=tag,
        tagged=Versions.parse(tagged if tagged is not None else (versions if tag is not None else "none")),
        ignorable=ignorable,
        flexible=None if flexible is None else Versions.parse(flexible),
    )


@dataclass(frozen=True, slots=True)
class Api:
    """The identity of a top-level message: api key, kind and its version ranges."""

    key: int
    kind: str
    valid: Versions
    flexible: Versions

    @classmethod
    def of(cls, key: int, kind: str, *, valid: str, flexible: str) -> Api:
        return cls(key, kind, Versions.parse(valid), Versions.parse(flexible))


@dataclass(frozen=True, slots=True, kw_only=True)
class Data:
    """Base of every message and nested struct. `unknown_tags` keeps tags nobody declared."""

    API: ClassVar[Api]
    unknown_tags: UnknownTags = field(default=(), repr=False)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super(Data, cls).__init_subclass__(**kwargs)  # named: slots=True replaced the class super() knows
        # `dataclass(slots=True)` builds a second class with the slots: that one is the message
        if "__slots__" in cls.__dict__ and "__dataclass_fields__" in cls.__dict__:
            cls.__init__ = _slot_init(cls)  # type: ignore[method-assign]


def _slot_init(cls: type) -> Any:
    """The constructor dataclass would write, setting each slot through its descriptor.

    A frozen dataclass's `__init__` calls `object.__setattr__` for every field (its own
    `__setattr__` refuses); calling the slot descriptors' setters directly does the same thing
    in about half the time, and decisions and replay build many messages. Defaults, required
    fields and keyword-only calls behave as dataclass's (messages have no default factories)."""
    names: dict[str, Any] = {}
    params, body = [], []
    for i, info in enumerate(dataclasses.fields(cls)):
        if info.default_factory is not dataclasses.MISSING or not info.init:
            raise TypeError(f"{cls.__name__}.{info.name}: messages take plain defaults only")
        if info.default is dataclasses.MISSING:
            params.append(info.name)
        else:
            names[f"_default_{i}"] = info.default
            params.append(f"{info.name}=_default_{i}")
        names[f"_set_{i}"] = _slot_setter(cls, info.name)
        body.append(f"    _set_{i}(self, {info.name})")
    source = f"def __init__(self, *, {', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(source, names)  # generated from the class's own field names
    init = names["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _slot_setter(cls: type, name: str) -> Any:
    """The setter of the slot `name` of `cls` (declared by it or a base)."""
    slot = next(klass.__dict__[name] for klass in cls.__mro__ if name in klass.__dict__)
    return slot.__set__


def builder(cls: type[T], *names: str) -> Callable[..., T]:
    """A constructor of the message class `cls` that takes the fields `names`, in that order,
    positionally, and leaves every other field at its default: what code that builds many
    messages of one class calls (a snapshot builds a PartitionRecord per partition), at about half
    the cost of the keyword constructor. The fields it leaves must have defaults."""
    infos = {info.name: info for info in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = [name for name in names if name not in infos]
    if unknown or len(set(names)) != len(names):
        raise TypeError(f"{cls.__name__}: cannot build from {names} (unknown or repeated: {unknown or names})")
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    body = ["    self = _new(_cls)"]
    for i, (name, info) in enumerate(infos.items()):
        scope[f"_set_{i}"] = _slot_setter(cls, name)
        if name in names:
            value = f"_{names.index(name)}"
        elif info.default is dataclasses.MISSING:
            raise TypeError(f"{cls.__name__}.{name} has no default: name it")
        else:
            scope[f"_default_{i}"] = info.default
            value = f"_default_{i}"
        body.append(f"    _set_{i}(self, {value})")
    params = ", ".join(f"_{index}" for index in range(len(names)))
    source = f"def build({params}):\n" + "\n".join(body) + "\n    return self\n"
    exec(source, scope)  # generated from the class's own field names
    build: Callable[..., T] = scope["build"]
    build.__qualname__ = f"{cls.__qualname__}.builder"
    return build


# ---------------------------------------------------------------------------- introspection
@dataclass(frozen=True, slots=True)
class FieldInfo:
    name: str
    spec: FieldSpec
    default: Any  # dataclasses.MISSING when the field is required

    @property
    def required(self) -> bool:
        return self.default is dataclasses.MISSING


_FIELDS: dict[type[Data], tuple[FieldInfo, ...]] = {}


def fields_of(cls: type[Data]) -> tuple[FieldInfo, ...]:
    """The wire fields of a `Data` class in declaration order (`unknown_tags` excluded)."""
    found = _FIELDS.get(cls)
    if found is not None:
        return found
    hints = typing.get_type_hints(cls, include_extras=True)
    out: list[FieldInfo] = []
    for dc_field in dataclasses.fields(cls):
        if dc_field.name == "unknown_tags":
            continue
        hint = hints[dc_field.name]
        specs = [m for m in getattr(hint, "__metadata__", ()) if isinstance(m, FieldSpec)]
        if len(specs) != 1:
            raise TypeError(f"{cls.__name__}.{dc_field.name} needs exactly one F(...) annotation")
        if dc_field.default is not dataclasses.MISSING:
            default: Any = dc_field.default
        elif dc_field.default_factory is not dataclasses.MISSING:
            default = dc_field.default_factory()
        else:
            default = dataclasses.MISSING
        out.append(FieldInfo(dc_field.name, specs[0], default))
    _FIELDS[cls] = tuple(out)
    return _FIELDS[cls]


def nested_classes(cls: type[Data]) -> list[type[Data]]:
    """Every nested struct class reachable from `cls` (depth first, without duplicates)."""
    seen: list[type[Data]] = []

    def walk(current: type[Data]) -> None:
        for info in fields_of(current):
            wire = info.spec.wire
            nested = wire.cls if isinstance(wire, Struct) else getattr(wire, "element", None)
            if isinstance(nested, type) and nested not in seen:
                seen.append(nested)
                walk(nested)

    walk(cls)
    return seen
