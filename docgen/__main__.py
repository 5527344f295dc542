"""`python -m docgen --write | --check`: write every generated page, or say which differ (exit 1)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from broker_sim.rule_map import RULE_MAP
from broker_sim.rule_map.page import PAGE_PATH as RULE_MAP_PAGE
from broker_sim.rule_map.page import render_page

from . import layout

#: every generated page and the function that renders it
PAGES: dict[Path, Callable[[], str]] = {
    layout.PAGE: layout.render,
    RULE_MAP_PAGE: lambda: render_page(RULE_MAP),
}


def stale() -> list[Path]:
    """The generated pages whose text differs from what their code renders."""
    return [page for page, render in PAGES.items() if not page.exists() or page.read_text() != render()]


def main(argv: Sequence[str]) -> int:
    if list(argv) == ["--write"]:
        for page, render in PAGES.items():
            page.write_text(render())
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
