"""A short run of the decoder fuzzer in the suite (the million-case run is `make fuzz`)."""

from __future__ import annotations

import random

from .fuzz_decode import build_corpus, mutate, run


def test_short_fuzz_run_has_no_escapes() -> None:
    counts = run(cases=20_000, seed=20261121)
    assert counts["escapes"] == 0
    # the run exercised both outcomes: mutations that still decode and ones that are rejected
    assert counts["decoded"] > 100
    assert counts["rejected"] > 1000


def test_corpus_covers_every_api_version_direction_and_record() -> None:
    labels = {label for label, _, _ in build_corpus(per_version=1)}
    assert "AlterPartitionRequest v0" in labels
    assert "AlterReplicaStateResponse v1" in labels
    assert "LeaderAndIsrRequest v7" in labels
    assert "PartitionChangeRecord v2" in labels
    assert "record batch" in labels


def test_mutations_change_the_input() -> None:
    rng = random.Random(3)
    data = bytes(range(64))
    changed = sum(mutate(data, rng) != data for _ in range(200))
    assert changed > 180
