"""One-line renderings of what a violation names: a metadata record and a journal entry.

Every rule module renders the records and entries its violations name; the renderings live here,
apart from any rule, so that a rule module imports them without importing another rule module.

Rules:
- A record's rendering (`render_record`) names the record type and only the fields that differ
  from their defaults, so `PartitionChangeRecord(topic_id=..., partition_id=3, isr=[1, 2])` says
  what the record changed; with an offset it starts `@OFFSET`.
- A journal entry's rendering (`render_entry`) names its kind and its fields, without its time
  and its free-form detail.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from broker_sim.journal import Entry


def render_record(record: Any, offset: int | None = None) -> str:
    """`Type(field=value, ...)` with only the fields that differ from their defaults (at `offset`)."""
    shown = []
    for item in dataclasses.fields(record):
        if item.name == "unknown_tags":
            continue
        value = getattr(record, item.name)
        if value == item.default:
            continue
        shown.append(f"{item.name}={_render_value(value)}")
    text = f"{type(record).__name__}({', '.join(shown)})"
    return text if offset is None else f"@{offset} {text}"


def _render_value(value: Any) -> str:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_render_value(item) for item in value) + "]"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return render_record(value)
    return repr(value)


def render_entry(entry: Entry) -> str:
    """A journal entry on one line: its kind and fields (without its time and free-form detail)."""
    shown = [
        f"{item.name}={getattr(entry, item.name)}"
        for item in dataclasses.fields(entry)
        if item.name not in ("wall_ns", "detail")
    ]
    return f"{entry.kind}({', '.join(shown)})"
