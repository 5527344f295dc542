"""The description language: what a message class must declare, and what it may not."""

import dataclasses
import uuid
from dataclasses import dataclass
from typing import Annotated, ClassVar

import pytest

from protocol.compiler import codec
from protocol.records.metadata import PartitionRecord
from protocol.spec import ARRAY, INT32, STRING, STRUCT, Api, Array, Data, F, builder, fields_of, nested_classes

from .sample_messages import SampleItem, SampleLeaf, SampleMessage


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingSpec(Data):
    API: ClassVar[Api] = Api.of(9998, "request", valid="0", flexible="none")
    value: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class RequiredButAbsent(Data):
    API: ClassVar[Api] = Api.of(9997, "request", valid="0-1", flexible="none")
    late: Annotated[int, F(INT32, "1+")]


@dataclass(frozen=True, slots=True, kw_only=True)
class TaggedTooEarly(Data):
    API: ClassVar[Api] = Api.of(9996, "request", valid="0-1", flexible="1+")
    tagged: Annotated[int, F(INT32, "0+", tag=0)] = 0


def test_fields_keep_declaration_order_and_specs() -> None:
    names = [info.name for info in fields_of(SampleLeaf)]
    assert names == ["id", "label", "added_in_3"]
    label = fields_of(SampleLeaf)[1]
    assert 1 in label.spec.nullable and 0 not in label.spec.nullable
    assert not fields_of(SampleLeaf)[0].required


def test_unknown_tags_is_not_a_wire_field() -> None:
    assert "unknown_tags" not in {info.name for info in fields_of(SampleMessage)}


def test_a_field_without_wire_spec_is_refused() -> None:
    with pytest.raises(TypeError, match="needs exactly one F"):
        fields_of(MissingSpec)


def test_a_required_field_must_exist_in_every_version() -> None:
    with pytest.raises(TypeError, match="absent from v0 but has no default"):
        codec(RequiredButAbsent, 0)


def test_tagged_fields_need_a_flexible_version() -> None:
    with pytest.raises(TypeError, match="tagged in a non-flexible version"):
        codec(TaggedTooEarly, 0)


def test_single_nested_struct_fields_are_declared_with_struct() -> None:
    with pytest.raises(TypeError, match=r"STRUCT\(\.\.\.\), an array of them ARRAY"):
        F(SampleLeaf)
    assert STRUCT(SampleLeaf).name == "SampleLeaf"


def test_nested_classes_are_found_depth_first() -> None:
    assert nested_classes(SampleMessage) == [SampleItem, SampleLeaf]


def test_array_names_read_like_kafka_types() -> None:
    assert ARRAY(INT32).name == "[]int32"
    assert Array(SampleLeaf).name == "[]SampleLeaf"
    assert ARRAY(STRING).name == "[]string"


# ---------------------------------------------------------------------------- constructors
@dataclass(frozen=True, slots=True, kw_only=True)
class Constructed(Data):
    API: ClassVar[Api] = Api.of(9995, "request", valid="0", flexible="none")
    required: Annotated[int, F(INT32)]
    name: Annotated[str, F(STRING)] = "default"


def test_messages_are_built_like_the_dataclasses_they_are() -> None:
    built = Constructed(required=7)
    assert (built.required, built.name, built.unknown_tags) == (7, "default", ())
    assert Constructed(required=7, name="x", unknown_tags=((3, b"\x01"),)).unknown_tags == ((3, b"\x01"),)
    assert built == Constructed(required=7) and built != Constructed(required=8)
    assert hash(built) == hash(Constructed(required=7))
    assert repr(built) == "Constructed(required=7, name='default')"
    with pytest.raises(TypeError, match="required"):
        Constructed()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="positional"):
        Constructed(7)  # type: ignore[arg-type,call-arg]
    with pytest.raises(TypeError, match="unexpected"):
        Constructed(required=1, other=2)  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        built.required = 8  # type: ignore[misc]


def test_every_message_gets_the_slot_constructor() -> None:
    from protocol.registry import all_apis

    for info in all_apis():
        for cls in (info.request, info.response):
            for klass in (cls, *nested_classes(cls)):
                assert klass.__init__.__qualname__ == f"{klass.__qualname__}.__init__"
                assert "_set_0" in klass.__init__.__code__.co_names, klass  # slot setters, not object.__setattr__


def test_a_builder_makes_what_the_keyword_constructor_makes_from_the_fields_it_names() -> None:
    build = builder(PartitionRecord, "partition_id", "topic_id", "isr", "leader")
    topic = uuid.UUID(int=7)
    made = build(3, topic, (1, 2), 2)
    assert made == PartitionRecord(partition_id=3, topic_id=topic, isr=(1, 2), leader=2)
    assert made.replicas == () and made.leader_epoch == -1 and made.unknown_tags == ()  # the others: defaults
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.leader = 1  # type: ignore[misc]


def test_a_builder_refuses_fields_the_class_does_not_have_or_names_twice() -> None:
    with pytest.raises(TypeError, match="unknown or repeated"):
        builder(PartitionRecord, "partition_id", "no_such_field")
    with pytest.raises(TypeError, match="unknown or repeated"):
        builder(PartitionRecord, "isr", "isr")
    with pytest.raises(TypeError, match="late has no default"):
        builder(RequiredButAbsent)
    assert builder(RequiredButAbsent, "late")(5) == RequiredButAbsent(late=5)
