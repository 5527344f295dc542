"""The tables of the Protocol page (docs/protocol.md), read from the codec and the controller.

The page is prose with generated blocks: each block between `<!-- generated: NAME -->` and
`<!-- /generated -->` is replaced by its table; the prose around it is the page's own. The tables:
every API of the codec's registry (key, versions, flexible versions) with what the controller does
with it (`controller.ops.served`); every metadata record type and version; every KRaft control record.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from controller.ops.served import DECODE_ONLY_API_KEYS, INBOUND_API_KEYS, OUTBOUND_API_KEYS, served_versions
from protocol.records.control import CONTROL_RECORD_TYPES
from protocol.records.metadata import METADATA_RECORD_TYPES
from protocol.registry import all_apis
from protocol.spec import Data
from protocol.versions import Versions

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "protocol.md"


def _flexible_from(flexible: Versions) -> str:
    return "never" if flexible.empty else str(flexible.lowest)


def _controller(key: int, versions: Versions) -> str:
    if key in INBOUND_API_KEYS:
        served = served_versions(key)
        return "serves it" if served == versions else f"serves {served}"
    if key in OUTBOUND_API_KEYS:
        return "sends it to brokers"
    if key in DECODE_ONLY_API_KEYS:
        return "neither (decoded for analytics)"
    raise ValueError(f"api key {key} is in none of the controller's sets")  # controller.ops.served's rule


def apis() -> str:
    lines = ["| API | key | versions | flexible from | the controller |", "|---|---:|---|---|---|"]
    for info in sorted(all_apis(), key=lambda info: info.name):
        versions = info.versions
        flexible = _flexible_from(info.request.API.flexible)
        lines.append(f"| {info.name} | {info.key:d} | {versions} | {flexible} | {_controller(info.key, versions)} |")
    return "\n".join(lines)


def _records(types: dict[int, type[Data]], suffixes: tuple[str, ...]) -> str:
    lines = ["| record | type | versions | flexible from |", "|---|---:|---|---|"]
    for key, cls in sorted(types.items()):
        name = cls.__name__
        for suffix in suffixes:
            name = name.removesuffix(suffix)
        lines.append(f"| {name} | {key} | {cls.API.valid} | {_flexible_from(cls.API.flexible)} |")
    return "\n".join(lines)


def metadata_records() -> str:
    return _records(METADATA_RECORD_TYPES, ("Record",))


def control_records() -> str:
    return _records(dict(CONTROL_RECORD_TYPES), ("Record", "Message"))


#: each generated block of the page by name, and its table
BLOCKS: dict[str, Callable[[], str]] = {
    "apis": apis,
    "metadata-records": metadata_records,
    "control-records": control_records,
}
_BLOCK = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.DOTALL)


def render(page: str) -> str:
    """`page` with each generated block's table rendered anew; a block of an unknown name, or a
    table without its block, is an error (the page and this module must name the same tables)."""
    found: list[str] = []

    def table(match: re.Match[str]) -> str:
        name = match.group(2)
        if name not in BLOCKS:
            raise ValueError(f"{PAGE.name}: no table named {name!r} ({', '.join(BLOCKS)})")
        found.append(name)
        return f"{match.group(1)}{BLOCKS[name]()}\n{match.group(4)}"

    rendered = _BLOCK.sub(table, page)
    if sorted(found) != sorted(BLOCKS):
        raise ValueError(f"{PAGE.name} must hold one block of each table: {', '.join(BLOCKS)} (found {found})")
    return rendered
