"""Third-party data the suite reads in place: `../shared/fixtures`, beside the repository.

KRaft data dirs that Apache Kafka wrote (`kafka/`) and captures of Kafka clients (`pcap/`), each
from a public repository under its own licence; that directory's README names the sources, what
each file holds and what was left out. Nothing of it is copied into the repository, and nothing
writes to it (the adoption check works on copies).

A test over these files fails, naming the path, when the directory is missing: a checkout
without it must not pass by leaving the real artifacts out, so `shared_fixture` asserts rather
than skips.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures"


def shared_fixture(*parts: str) -> Path:
    """The file or directory `parts` under `SHARED_FIXTURES`; an AssertionError naming it if it is missing."""
    path = SHARED_FIXTURES.joinpath(*parts)
    assert path.exists(), (
        f"{path} is missing: the tests over real Kafka artifacts read ../shared/fixtures (beside the "
        f"repository, {SHARED_FIXTURES}) in place; its README lists what it must hold"
    )
    return path
