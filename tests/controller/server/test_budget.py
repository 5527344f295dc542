"""The memory budget shared by connections: reserve at the prefix, wait in line, release wakes."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from controller.server.budget import MemoryBudget


def test_a_budget_smaller_than_the_largest_frame_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot hold a frame"):
        MemoryBudget(99, largest_frame=100)
    assert MemoryBudget(100, largest_frame=100).capacity == 100


def test_reservations_fit_or_fail_and_forced_memory_counts() -> None:
    budget = MemoryBudget(100)
    assert budget.try_reserve(60)
    assert not budget.try_reserve(41)
    assert budget.try_reserve(40)
    budget.force(30)  # bytes already read: counted even past the capacity
    assert budget.used == 130
    budget.release(130)
    assert budget.used == 0


async def test_waiters_are_granted_in_line_as_memory_is_released() -> None:
    budget = MemoryBudget(100)
    assert budget.try_reserve(90)
    granted: list[str] = []

    async def reserve(name: str, size: int) -> None:
        await budget.wait_reserve(size)
        granted.append(name)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reserve, "big", 80)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(reserve, "small", 10)
        await trio.testing.wait_all_tasks_blocked()
        # 10 bytes are free, but the small one queues behind the big one: no starvation
        assert (granted, budget.waiting, budget.used) == ([], 2, 90)
        assert not budget.try_reserve(5), "a newcomer must not jump the line"
        budget.release(70)  # 80 free: the big one fits, and then the small one no longer does
        await trio.testing.wait_all_tasks_blocked()
        assert (granted, budget.waiting, budget.used) == (["big"], 1, 100)
        budget.release(20)
        await trio.testing.wait_all_tasks_blocked()
    assert granted == ["big", "small"]
    assert budget.used == 90 and budget.waiting == 0


async def test_a_cancelled_waiter_leaves_the_line_and_lets_the_next_one_through() -> None:
    budget = MemoryBudget(100)
    assert budget.try_reserve(50)
    granted: list[int] = []
    head = trio.CancelScope()

    async def reserve(size: int, scope: trio.CancelScope | None = None) -> None:
        with scope or trio.CancelScope():
            await budget.wait_reserve(size)
            granted.append(size)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reserve, 70, head)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(reserve, 40)
        await trio.testing.wait_all_tasks_blocked()
        assert budget.waiting == 2 and granted == []
        head.cancel()  # the 70 leaves the line: the 40 behind it fits at once
        await trio.testing.wait_all_tasks_blocked()
    assert granted == [40] and budget.used == 90 and budget.waiting == 0


async def test_a_waiter_cancelled_before_its_grant_runs_gives_the_memory_back() -> None:
    budget = MemoryBudget(100)
    assert budget.try_reserve(100)
    scope = trio.CancelScope()

    async def waiter() -> None:
        with scope:
            await budget.wait_reserve(30)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        scope.cancel()  # the waiter is woken with Cancelled, but has not run yet ...
        budget.release(100)  # ... so it is still in line, and granted on its behalf
        assert budget.used == 30
    assert scope.cancelled_caught
    assert budget.used == 0 and budget.waiting == 0


async def test_a_reservation_holds_its_memory_for_the_block_however_it_ends() -> None:
    budget = MemoryBudget(100)
    async with budget.reserve(60) as held:
        assert held.granted and budget.used == 60
        async with budget.reserve(30, force=True):  # already held elsewhere: counted, never waits
            assert budget.used == 90
        assert budget.used == 60
    assert budget.used == 0 and not held.granted
    with pytest.raises(RuntimeError):
        async with budget.reserve(100):
            raise RuntimeError("the request failed")
    assert budget.used == 0


async def test_a_reservation_waits_in_line_and_holds_nothing_if_cancelled_meanwhile() -> None:
    budget = MemoryBudget(100)
    order: list[str] = []

    async def hold(name: str, size: int, scope: trio.CancelScope) -> None:
        with scope:
            async with budget.reserve(size):
                order.append(name)
                await trio.sleep_forever()

    first, second, third = trio.CancelScope(), trio.CancelScope(), trio.CancelScope()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(hold, "first", 70, first)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(hold, "second", 50, second)
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(hold, "third", 20, third)
        await trio.testing.wait_all_tasks_blocked()
        assert order == ["first"] and budget.waiting == 2, "20 bytes fit, but not before the 50 in line"
        second.cancel()  # leaves the line holding nothing: the third fits now
        await trio.testing.wait_all_tasks_blocked()
        assert order == ["first", "third"] and budget.used == 90 and budget.waiting == 0
        first.cancel()
        third.cancel()
    assert budget.used == 0
