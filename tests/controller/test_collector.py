"""The cyclic collector's policy (controller.collector): full passes wait while long work runs."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import trio

from controller import collector
from controller.slices import Done, Slices, run_paced


@pytest.fixture(autouse=True)
def thresholds() -> Iterator[None]:
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


def test_full_passes_wait_while_long_work_runs_nested_or_not() -> None:
    gc.set_threshold(700, 10, 10)
    with collector.long_work:
        assert gc.get_threshold() == (700, 10, collector.DEFERRED)  # young passes go on
        with collector.long_work:  # overlapping work shares the wait
            assert collector.deferring()
        assert collector.deferring()
    assert gc.get_threshold() == (700, 10, 10) and not collector.deferring()


def test_a_wait_ends_after_its_longest_time_even_if_long_work_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    gc.set_threshold(700, 10, 10)
    with collector.long_work:
        collector.still_long()
        assert collector.deferring()  # not long enough yet
        monkeypatch.setattr(collector, "MAX_DEFERRAL_S", -1.0)
        collector.still_long()
        assert gc.get_threshold() == (700, 10, 10)  # full passes resume while the work goes on
    assert gc.get_threshold() == (700, 10, 10)
    monkeypatch.undo()
    with collector.long_work:  # the next long work waits again
        assert collector.deferring()


def test_run_paced_defers_full_passes_only_for_work_that_pauses() -> None:
    seen: list[bool] = []

    def work(pauses: int) -> Slices[int]:
        for _ in range(pauses):
            seen.append(collector.deferring())
            yield None
        seen.append(collector.deferring())
        return pauses

    async def main() -> None:
        assert await run_paced(Done(0)) == 0
        assert await run_paced(work(0)) == 0
        assert seen == [False]  # finished at once: not long work
        seen.clear()
        assert await run_paced(work(2)) == 2
        assert seen == [False, True, True]  # from its first pause on
        assert not collector.deferring()

    trio.run(main)
