"""The rings of architecture.md: what each package may import.

`protocol` is a pure codec (no sockets, clock, logging, trio or upper rings); `analytics`
imports `protocol` but nothing of the controller or the fleet. Checked two ways: statically
over every module's imports, and by importing the package alone in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FORBIDDEN = {
    "protocol": {"trio", "socket", "logging", "time", "asyncio", "threading", "controller", "broker_sim", "analytics"},
    "analytics": {"controller", "broker_sim", "trio"},
    "broker_sim": {"controller"},
}


def imported_roots(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_package_imports_stay_in_their_ring(package: str) -> None:
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = imported_roots(path) & FORBIDDEN[package]
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}


def test_protocol_imports_alone_without_upper_rings() -> None:
    code = (
        "import sys, pkgutil, importlib, protocol\n"
        "for m in pkgutil.walk_packages(protocol.__path__, 'protocol.'): importlib.import_module(m.name)\n"
        "from protocol.registry import all_apis; all_apis()\n"
        "bad = [m for m in ('trio', 'controller', 'broker_sim', 'analytics', 'pyspark') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_checker_sees_imports() -> None:
    assert {"struct", "construct"} <= imported_roots(ROOT / "protocol" / "constructs.py")
