"""`python -m docgen --write | --check`: write every generated page, or say which differ (exit 1)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from broker_sim.rule_map import RULE_MAP
from broker_sim.rule_map.page import PAGE_PATH as RULE_MAP_PAGE
from broker_sim.rule_map.page import render_page

from . import layout, protocol_tables

#: every generated page, and what it must hold given what it holds now (a page with generated
#: blocks keeps its prose; a wholly generated page ignores its text)
PAGES: dict[Path, Callable[[str], str]] = {
    layout.PAGE: lambda _: layout.render(),
    RULE_MAP_PAGE: lambda _: render_page(RULE_MAP),
    protocol_tables.PAGE: protocol_tables.render,
}


def _text(page: Path) -> str:
    return page.read_text() if page.exists() else ""


def stale() -> list[Path]:
    """The generated pages whose text differs from what their code renders."""
    return [page for page, render in PAGES.items() if _text(page) != render(_text(page))]


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["--write"]:
        for page, render in PAGES.items():
            page.write_text(render(_text(page)))
        return 0
    if list(argv) == ["--check"]:
        found = stale()
        for page in found:
            print(
                f"{page.relative_to(layout.ROOT)} differs from its code: run python -m docgen --write", file=sys.stderr
            )
        return 1 if found else 0
    print("usage: python -m docgen --write | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
