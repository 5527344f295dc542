"""The documentation: the README stays short and its links land on pages that exist; the generated
pages are what their code renders; `make docs` fails on a broken link or anchor (MkDocs' strict
mode, which `make test` runs before pytest)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import docgen.__main__ as docgen
from controller.ops import served
from docgen import protocol_tables
from protocol.api_keys import ApiKey
from protocol.versions import Versions
from tests.test_readme_commands import README, make_recipe

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_short_and_its_links_land_on_pages_that_exist() -> None:
    assert len(README.splitlines()) <= 350
    targets = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", README)
    assert len(targets) > 15
    assert [target for target in targets if not (ROOT / target).is_file()] == []


def test_the_generated_pages_are_current() -> None:
    assert [str(page.relative_to(ROOT)) for page in docgen.stale()] == []


def test_a_page_that_differs_from_its_code_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "layout.md"
    page.write_text("hand-edited\n")
    monkeypatch.setattr(docgen, "PAGES", {page: lambda _: "rendered\n"})  # the real pages untouched
    assert docgen.stale() == [page]
    assert docgen.main(["--write"]) == 0 and page.read_text() == "rendered\n"


def _build(site: Path, extra: str = "") -> subprocess.CompletedProcess[str]:
    """`make docs`'s recipe (python -m mkdocs build --strict ...) on a copy of the docs in `site`,
    with `extra` appended to the home page."""
    (recipe,) = [line for line in make_recipe("docs").splitlines() if "mkdocs" in line]
    assert "-m mkdocs build --strict" in recipe and "--quiet" not in recipe  # --quiet lets warnings pass
    shutil.copytree(ROOT / "docs", site / "docs")
    shutil.copy(ROOT / "mkdocs.yml", site / "mkdocs.yml")
    home = site / "docs" / "index.md"
    home.write_text(home.read_text() + extra)
    command = recipe.replace(".venv/bin/python", sys.executable)
    return subprocess.run(["sh", "-c", command], cwd=site, capture_output=True, text=True, timeout=120)


def test_make_docs_builds_the_docs_and_fails_on_a_broken_anchor(tmp_path: Path) -> None:
    built = _build(tmp_path / "as-is")
    assert built.returncode == 0, built.stderr[-2000:]
    assert (tmp_path / "as-is" / "site" / "fleet" / "rule-map" / "index.html").is_file()
    broken = _build(tmp_path / "broken", "\n[a decision](controller/decisions.md#no-such-decision)\n")
    assert broken.returncode != 0 and "no-such-decision" in broken.stderr


def test_make_test_builds_the_docs_before_the_suite() -> None:
    recipe = make_recipe("test")
    assert recipe.index("mkdocs build --strict") < recipe.index("pytest")


def test_the_protocol_tables_come_from_the_codec_and_the_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    page = protocol_tables.PAGE.read_text()
    assert "| Fetch | 1 | 0-17 | 12 | serves 13-17 |" in page  # the codec's versions, the controller's narrower
    assert "| LeaderAndIsr | 4 | 0-7 | 4 | sends it to brokers |" in page
    assert "| PartitionChange | 5 | 0-2 | 0 |" in page
    monkeypatch.setitem(served.SERVED_VERSIONS, ApiKey.FETCH, Versions(12, 17))
    assert "| Fetch | 1 | 0-17 | 12 | serves 12-17 |" in protocol_tables.render(page)


def test_the_protocol_page_must_hold_each_table_once_and_no_other() -> None:
    page = protocol_tables.PAGE.read_text()
    with pytest.raises(ValueError, match="no table named 'nope'"):
        protocol_tables.render(page + "\n<!-- generated: nope -->\n<!-- /generated -->\n")
    without = page.replace("<!-- generated: control-records -->", "<!-- control-records -->")
    with pytest.raises(ValueError, match="one block of each table"):
        protocol_tables.render(without)
