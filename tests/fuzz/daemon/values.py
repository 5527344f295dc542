"""Hostile values for a valid request, chosen by field name and wire type.

`hostile_variant(message, version, context, rng)` walks a message the way the codec does
(`protocol.spec.fields_of`, only the fields present at `version`), picks a few places and puts a
hostile value there, returning the new message and a line per change for the finding's summary.
The values are the edges a node must refuse or survive, made from the node's current values:
- ids: the node itself, another voter, known brokers, an unknown id, -1, 0, int32 max;
- epochs: the template's value -1, +0, +1, +1000, the Raft epoch likewise, -1, 0, the type's max;
- offsets: -1, 0, the log end, the log end + 1, the high watermark, int64 max;
- cluster ids: right, wrong, empty, null where nullable; topic names and ids: known, unknown,
  `__cluster_metadata`, empty, too long, invalid; partitions: 0, 1, -1, one past the end, int32 max;
- ACL enums: every value, 0 (UNKNOWN), 1 (ANY), 99 (unknown) and -1 (0xff, 255 read unsigned);
- lists: empty, an entry duplicated, oversized (hundreds to thousands of copies), one dropped.

Rules: every value fits its wire type (the codec encodes it); every choice comes from `rng`.
"""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from protocol.acl_codes import AclOperation, AclPermissionType, PatternType, ResourceType
from protocol.spec import BOOL, UUID, Array, Bytes, Data, Fixed, Str, Struct, WireType, fields_of

from .context import METADATA_TOPIC, METADATA_TOPIC_ID, Context

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
}
ID_FIELDS = frozenset(
    {"broker_id", "replica_id", "leader_id", "candidate_id", "voter_id", "node_id", "controller_id"}
    | {"broker_ids", "new_isr", "preferred_successors"}  # arrays of ids
)
ACL_ENUMS: dict[str, list[int]] = {
    "resource_type": [int(value) for value in ResourceType],
    "pattern_type": [int(value) for value in PatternType],
    "resource_pattern_type": [int(value) for value in PatternType],
    "operation": [int(value) for value in AclOperation],
    "permission_type": [int(value) for value in AclPermissionType],
}
#: small enums of other APIs: every value, one past them, an unknown one, -1
SMALL_ENUMS = {
    "election_type": [0, 1, 2],
    "new_state": [0, 1, 2, 3],
    "leader_recovery_state": [0, 1, 2],
    "isolation_level": [0, 1, 2],
    "endpoint_type": [0, 1, 2, 3],
    "security_protocol": [0, 1, 2, 3, 4],
}
LIMITS = {
    "max_wait_ms": [0, 1, 500, -1, 2**31 - 1],
    "min_bytes": [0, 1, -1, 2**31 - 1],
    "max_bytes": [0, 1, -1, 1 << 20, 2**31 - 1],
    "partition_max_bytes": [0, 1, -1, 1 << 20, 2**31 - 1],
    "timeout_ms": [-1, 0, 1, 2**31 - 1],
    # 10001 passes --max-records-per-operation (10000): refused before anything is written
    "num_partitions": [-1, 0, 1, 3, 10001, 2**31 - 1],
    "replication_factor": [-1, 0, 1, 3, 4, 2**15 - 1],
}
#: list lengths of an oversized list (copies of one entry)
OVERSIZED = (100, 1000, 5000)
#: list elements walked at most (see `_some_indexes`)
WALKED = 6


@dataclass(frozen=True, slots=True)
class Slot:
    """A place in a message: the path to it (field names and list indexes) and what is there."""

    path: tuple[str | int, ...]
    name: str
    wire: WireType
    nullable: bool
    value: Any
    owner: str  # the class holding the field (tells a topic's `name` from a listener's)


def slots(message: Data, version: int, path: tuple[str | int, ...] = ()) -> Iterator[Slot]:
    """Every field of `message` present at `version`, depth first; list elements of primitive lists too."""
    owner = type(message).__name__
    for info in fields_of(type(message)):
        spec = info.spec
        if version not in spec.versions:
            continue
        value = getattr(message, info.name)
        here = (*path, info.name)
        yield Slot(here, info.name, spec.wire, version in spec.nullable, value, owner)
        wire = spec.wire
        if isinstance(wire, Struct):
            yield from slots(value, version, here)
        elif isinstance(wire, Array) and value is not None:
            for index in _some_indexes(len(value)):
                element = value[index]
                if isinstance(element, Data):
                    yield from slots(element, version, (*here, index))
                else:
                    element_wire = wire.element
                    assert not isinstance(element_wire, type)
                    yield Slot((*here, index), info.name, element_wire, False, element, owner)


def fit(message: Data, version: int) -> Data:
    """`message` with every field absent from `version` back at its default, nested structs too
    (a template may fill in what only some versions carry)."""
    changes: dict[str, Any] = {}
    for info in fields_of(type(message)):
        value = getattr(message, info.name)
        if version not in info.spec.versions:
            if value != info.default:
                changes[info.name] = info.default
            continue
        wire = info.spec.wire
        fitted: Any
        if isinstance(wire, Struct) and isinstance(value, Data):
            fitted = fit(value, version)
        elif isinstance(wire, Array) and isinstance(wire.element, type) and value:
            fitted = tuple(fit(element, version) for element in value)
        else:
            continue
        if fitted != value:
            changes[info.name] = fitted
    return dataclasses.replace(message, **changes) if changes else message


def _some_indexes(length: int) -> range | tuple[int, ...]:
    """The elements of a list worth walking: all of a short one; of a long one (an oversized
    list, copies of one entry) the first few and the last, so a walk stays cheap."""
    return range(length) if length <= WALKED else (*range(WALKED - 1), length - 1)


def replace_at(message: Any, path: tuple[str | int, ...], new: Any) -> Any:
    """`message` with the value at `path` replaced (frozen dataclasses and tuples rebuilt)."""
    if not path:
        return new
    step, rest = path[0], path[1:]
    if isinstance(step, int):
        items = list(message)
        items[step] = replace_at(items[step], rest, new)
        return tuple(items)
    return dataclasses.replace(message, **{step: replace_at(getattr(message, step), rest, new)})


def _int_candidates(slot: Slot, context: Context) -> list[int]:
    name, current = slot.name, slot.value
    low, high = INT_RANGES[slot.wire.name]
    if name in ID_FIELDS:
        found = context.id_pool()
    elif name.endswith(("_type", "_type_filter")) or name == "operation":
        base = name.removesuffix("_filter")
        found = [*ACL_ENUMS.get(base, SMALL_ENUMS.get(base, [0, 1, 2])), 99, -1, 127]
    elif name in SMALL_ENUMS:
        found = [*SMALL_ENUMS[name], 99, -1]
    elif name in LIMITS:
        found = LIMITS[name]
    elif "epoch" in name:
        raft = context.epoch
        found = [current - 1, current, current + 1, current + 1000, raft - 1, raft + 1, raft + 1000, -1, 0, high]
        if slot.wire.name == "int64":  # a broker epoch: the known ones, and offsets (epochs are offsets)
            found += [broker.epoch for broker in context.brokers] + [context.log_end_offset]
    elif "offset" in name or name == "position":
        end = context.log_end_offset
        found = [-1, 0, 1, end, end + 1, context.high_watermark, current + 1, 2**63 - 1]
    elif name in ("partition", "partition_index", "partitions", "partition_id", "index"):
        found = [0, 1, -1, current + 1, 2**31 - 1]
    elif name == "port":
        found = [0, 1, 65535, context.dead_port]
    else:
        found = [-1, 0, 1, current + 1, low, high, 99]
    return [value for value in found if low <= value <= high]


def _uuid_candidates(slot: Slot, context: Context, rng: random.Random) -> list[uuid.UUID]:
    fresh = uuid.UUID(int=rng.getrandbits(128))
    if "topic" in slot.name:
        return [*(topic.topic_id for topic in context.topics), METADATA_TOPIC_ID, uuid.UUID(int=0), fresh]
    if slot.name == "incarnation_id":
        return [*(broker.incarnation_id for broker in context.brokers), uuid.UUID(int=0), fresh]
    # directory ids: unassigned (0), LOST (1), MIGRATING (2), a new one
    return [uuid.UUID(int=0), uuid.UUID(int=1), uuid.UUID(int=2), fresh]


def _string_candidates(slot: Slot, context: Context) -> list[str | None]:
    name, owner = slot.name, slot.owner
    if name == "cluster_id":
        return [context.cluster_id, "WrongClusterIdAAAAAAAA", "", context.cluster_id.lower() + "x"]
    topical = name in ("topic", "topic_name", "topic_names") or (name == "name" and "Topic" in owner)
    if topical or name.startswith("resource_name"):
        known = [topic.name for topic in context.topics]
        return [*known, METADATA_TOPIC, "no-such-topic", "", "t" * 250, "bad/name", "..", "kafka-cluster"]
    if name.startswith("principal"):
        return ["User:fuzzer", "User:*", "User:", "User:controller", "Group:g", "", "User:" + "p" * 300]
    if name.startswith("host"):
        return ["*", "127.0.0.1", "", "::1", "not a host"]
    return ["", "x" * 300, "\u00fc\u00ef\u00f1", "\x00", "PLAINTEXT", "CONTROLLER"]


def _list_candidates(slot: Slot, rng: random.Random, oversize: bool) -> list[tuple[str, Any]]:
    items = tuple(slot.value or ())
    found: list[tuple[str, Any]] = [("empty", ())]
    if items:
        entry = rng.choice(items)
        found.append(("duplicated", (*items, entry)))
        if oversize:
            found.append(("oversized", (entry,) * rng.choice(OVERSIZED)))
        if len(items) > 1:
            drop = rng.randrange(len(items))
            found.append(("one dropped", items[:drop] + items[drop + 1 :]))
    return found


def hostile_value(slot: Slot, context: Context, rng: random.Random, oversize: bool = True) -> tuple[str, Any] | None:
    """(label, value) of a hostile value for `slot`; None when it has none (a nested struct).
    `oversize`: whether a list may be made oversized."""
    wire = slot.wire
    if isinstance(wire, Array):
        if slot.nullable and rng.random() < 0.2:
            return "null", None
        label, value = rng.choice(_list_candidates(slot, rng, oversize))
        return f"{label} ({len(value)})", value
    if isinstance(wire, Struct):
        return None
    if slot.nullable and rng.random() < 0.15:
        return "null", None
    chosen: Any
    if wire is BOOL:
        chosen = not slot.value
    elif wire is UUID:
        chosen = rng.choice(_uuid_candidates(slot, context, rng))
    elif isinstance(wire, Fixed) and wire.name in INT_RANGES:
        chosen = rng.choice(_int_candidates(slot, context))
    elif isinstance(wire, Str):
        chosen = rng.choice(_string_candidates(slot, context))
    elif isinstance(wire, Bytes):
        chosen = rng.choice([b"", b"\x00" * 16, b"\xff" * 3])
    else:
        return None
    return _short(chosen), chosen


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:24]}...({len(text)} chars)"


def hostile_variant(
    message: Data, version: int, context: Context, rng: random.Random, changes: int | None = None
) -> tuple[Data, list[str]]:
    """`message` with `changes` (1 to 3 if None) places given hostile values, and what was changed."""
    done: list[str] = []
    count = changes if changes is not None else rng.choice((1, 1, 1, 2, 3))
    for _ in range(count):
        candidates = [slot for slot in slots(message, version) if not isinstance(slot.wire, Struct)]
        if not candidates:
            break
        slot = rng.choice(candidates)
        # one oversized list a frame: one inside another would make frames of tens of megabytes
        found = hostile_value(slot, context, rng, oversize=not any("=oversized" in line for line in done))
        if found is None:
            continue
        label, value = found
        message = replace_at(message, slot.path, value)
        done.append(f"{'.'.join(map(str, slot.path))}={label}")
    return message, done
