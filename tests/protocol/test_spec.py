"""The description language: what a message class must declare, and what it may not."""

from dataclasses import dataclass
from typing import Annotated, ClassVar

import pytest

from protocol.compiler import codec
from protocol.spec import ARRAY, INT32, STRING, Api, Array, Data, F, fields_of, nested_classes

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


def test_single_nested_struct_fields_are_refused() -> None:
    with pytest.raises(TypeError, match="use ARRAY"):
        F(SampleLeaf)


def test_nested_classes_are_found_depth_first() -> None:
    assert nested_classes(SampleMessage) == [SampleItem, SampleLeaf]


def test_array_names_read_like_kafka_types() -> None:
    assert ARRAY(INT32).name == "[]int32"
    assert Array(SampleLeaf).name == "[]SampleLeaf"
    assert ARRAY(STRING).name == "[]string"
