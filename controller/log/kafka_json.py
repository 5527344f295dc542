"""Kafka's JSON view of a record, as its generated `*JsonConverter.write` and the dump tool print it.

Rules (those of Kafka's `JsonConverterGenerator`):
- Fields in declaration order, named in camelCase: Kafka's field name with a lower-case first
  letter, which is the camelCase of our snake_case names (`partition_id` -> `partitionId`).
- A field absent from the version is left out; a tagged field is written only when it differs
  from its default; null is `null`.
- UUIDs are Kafka's 22-character base64url strings, bytes standard base64 (Jackson's
  BinaryNode), nested structs objects written at the parent's version.
- Output is compact, like Jackson's `toString`: no spaces, non-ASCII left as it is.
- A metadata record's type is its class name in SCREAMING_SNAKE_CASE (`MetadataRecordType`:
  `PartitionChangeRecord` -> `PARTITION_CHANGE_RECORD`).
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from protocol.spec import UUID, Array, Bytes, Data, Struct, fields_of

from .ids import uuid_string

_WORD_START = re.compile(r"(?<!^)(?=[A-Z])")


def camel_case(name: str) -> str:
    """Kafka's JSON field name for one of our snake_case field names."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def record_type_name(cls: type[Data]) -> str:
    """Kafka's `MetadataRecordType` name of a record class (`TopicRecord` -> `TOPIC_RECORD`)."""
    return _WORD_START.sub("_", cls.__name__).upper()


def to_json_tree(message: Data, version: int) -> dict[str, Any]:
    """The message at `version` as Kafka's JSON converter builds it (a dict, ready for `dumps`)."""
    node: dict[str, Any] = {}
    for info in fields_of(type(message)):
        spec = info.spec
        if version not in spec.versions:
            continue
        value = getattr(message, info.name)
        if version in spec.tagged and value == info.default:
            continue
        node[camel_case(info.name)] = _value(spec.wire, value, version)
    return node


def _value(wire: Any, value: Any, version: int) -> Any:
    if value is None:
        return None
    if wire is UUID:
        return uuid_string(value)
    if isinstance(wire, Bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(wire, Struct):
        return to_json_tree(value, version)
    if isinstance(wire, Array):
        element = wire.element
        if isinstance(element, type):
            return [to_json_tree(item, version) for item in value]
        return [_value(element, item, version) for item in value]
    return value


def dumps(tree: Any) -> str:
    """Compact JSON, as Jackson's `JsonNode.toString` writes it."""
    return json.dumps(tree, separators=(",", ":"), ensure_ascii=False)


def metadata_payload(record: Data, version: int) -> str:
    """The dump tool's payload of a metadata record: `{"type":...,"version":...,"data":{...}}`."""
    return dumps({"type": record_type_name(type(record)), "version": version, "data": to_json_tree(record, version)})
