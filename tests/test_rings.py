"""The rings of architecture.md: what each package may import.

- `protocol` is a pure codec: no sockets, clock, logging, trio or upper rings.
- The controller's core (decisions in `controller/ops`, state and replay in `controller/state`,
  the authorizer in `controller/auth`, the entry point `controller/core.py`) is pure: no trio,
  os, socket, time, threads or logging, and nothing of the shell (`controller.server`), the control
  channel (`controller.control`, whose orders the core derives: `controller.control.orders` is pure
  and allowed) or the log.
- The fleet's broker model (`broker_sim/model`) is pure likewise: seeded logic, time passed in;
  its checker (`broker_sim/check`) reads files, never the network, and nothing of the fleet's model
  or shell: what the fleet did and assumed reaches it through the journal (`broker_sim/journal`,
  the format both sides share, which imports neither); trio lives in `broker_sim/shell`.
- `broker_sim` and `analytics` import nothing of `controller`; `analytics` nothing of the fleet. The
  one exception is the simulator (`broker_sim/sim`), where the fleet's brokers meet real controllers
  in one process: it may import both, and nothing imports it but the fleet's command line (lazily).
Checked two ways: statically over every module's imports (relative ones resolved), and by
importing `protocol` alone in a fresh interpreter.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

IMPURE = {"trio", "os", "socket", "time", "asyncio", "threading", "logging", "subprocess", "selectors"}

#: (files, modules they may not import: a name forbids the module and everything under it)
RINGS: dict[str, tuple[list[str], set[str]]] = {
    "protocol": (
        ["protocol"],
        {"trio", "socket", "logging", "time", "asyncio", "threading", "controller", "broker_sim", "analytics"},
    ),
    "controller core": (
        ["controller/ops", "controller/state", "controller/core.py", "controller/raft", "controller/auth"],
        IMPURE
        | {
            "controller.server",
            "controller.log",
            "controller.engine",
            "controller.control.channel",
            "controller.control.links",
            "controller.control.outcomes",
        },
    ),
    "fleet model": (["broker_sim/model"], IMPURE | {"controller", "broker_sim.shell"}),
    "fleet checker": (
        ["broker_sim/check"],
        {"trio", "socket", "asyncio", "controller", "broker_sim.shell", "broker_sim.model"},
    ),
    "fleet journal": (["broker_sim/journal"], {"broker_sim.model", "broker_sim.shell", "broker_sim.check"}),
    "fleet outside its shell": (["broker_sim/*.py", "broker_sim/journal"], {"trio", "asyncio", "controller"}),
    "fleet": (
        ["broker_sim/*.py", "broker_sim/journal", "broker_sim/model", "broker_sim/check", "broker_sim/shell"],
        {"controller", "broker_sim.sim"},
    ),
    "controller": (["controller"], {"broker_sim", "analytics"}),
    "analytics": (["analytics"], {"controller", "broker_sim", "trio"}),
    "simulator": (["broker_sim/sim"], {"analytics"}),
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, by absolute name (relative imports resolved)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            found.add(module)
            found.update(f"{module}.{alias.name}" for alias in node.names)  # `from x import submodule`
    return found


def files_of(places: list[str]) -> list[Path]:
    out: list[Path] = []
    for place in places:
        target = ROOT / place
        if "*" in place:
            out.extend(sorted(ROOT.glob(place)))
        else:
            out.extend(sorted(target.rglob("*.py")) if target.is_dir() else [target])
    return out


def forbidden(module: str, names: set[str]) -> bool:
    return any(module == name or module.startswith(name + ".") for name in names)


@pytest.mark.parametrize("ring", sorted(RINGS))
def test_each_ring_imports_only_what_it_may(ring: str) -> None:
    places, names = RINGS[ring]
    offenders = {}
    for path in files_of(places):
        bad = sorted(module for module in imported_modules(path) if forbidden(module, names))
        if bad:
            offenders[str(path.relative_to(ROOT))] = bad
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


def test_the_checker_sees_imports_relative_ones_included() -> None:
    assert {"struct", "construct"} <= imported_modules(ROOT / "protocol" / "constructs.py")
    core = imported_modules(ROOT / "controller" / "core.py")
    assert {"controller.ops.snapshot", "controller.state.frozen", "controller.control.orders"} <= core
    assert forbidden("controller.server.daemon", RINGS["controller core"][1])
    assert not forbidden("controller.control.orders", RINGS["controller core"][1])
    assert forbidden("os.path", IMPURE)
    checker = RINGS["fleet checker"][1]
    assert forbidden("broker_sim.model.timing", checker) and forbidden("broker_sim.shell.runner", checker)
    assert not forbidden("broker_sim.journal", checker)
