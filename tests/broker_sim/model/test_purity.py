"""The model is pure (architecture.md's rings): no trio, sockets, clock or threads; and nothing in
broker_sim imports the controller."""

from __future__ import annotations

from pathlib import Path

from tests.test_rings import imported_roots

ROOT = Path(__file__).resolve().parents[3]


def test_the_model_imports_no_io_and_no_clock() -> None:
    forbidden = {"trio", "socket", "time", "threading", "asyncio", "controller", "logging"}
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_roots(path) & forbidden)
        for path in sorted((ROOT / "broker_sim" / "model").rglob("*.py"))
        if imported_roots(path) & forbidden
    }
    assert offenders == {}


def test_broker_sim_never_imports_the_controller() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "broker_sim").rglob("*.py"))
        if "controller" in imported_roots(path)
    ]
    assert offenders == []
