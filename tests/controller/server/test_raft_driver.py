"""The Raft driver (controller.server.raft_driver) executing the core's actions, in one trio run
around a real engine and log: in order, each finished before the next starts, those that need no
waiting done at once while the executing task is idle, truncations waiting for the log's readers."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from controller.engine import ControllerEngine
from controller.raft import ElectionState, Epoch, HighWatermark, NodeId, PersistQuorumState, TruncateTo
from controller.raft import messages as rm
from controller.raft.actions import SendRequest
from controller.server.denials import Denials
from controller.server.peer_link import PeerLink
from controller.server.quorum_config import QuorumConfig, Voter
from controller.server.raft_driver import RaftDriver


class Listener:
    """The controller above the driver, recording what it hears."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, int]] = []

    def led(self, epoch: int, start_offset: int) -> None:
        self.heard.append(("led", epoch))

    async def leadership_ended(self, epoch: int) -> None:
        self.heard.append(("ended", epoch))

    def committed_to(self, offset: int) -> None:
        self.heard.append(("committed", offset))

    def snapshot_loaded(self) -> None:
        self.heard.append(("snapshot", 0))


class Uncounted:
    def request_failed(self, stage: str) -> None: ...
    def authorization_denied(self, api: str, principal: str) -> None: ...
    def election(self, seconds: float) -> None: ...


def voters() -> QuorumConfig:
    # the other two voters listen nowhere: the node stays a follower, its links retrying
    return QuorumConfig(1, tuple(Voter(node, "127.0.0.1", 1) for node in (1, 2, 3)))


@pytest.fixture
async def running(tmp_path: Path) -> AsyncIterator[tuple[RaftDriver, Listener, ControllerEngine]]:
    engine = ControllerEngine.load(tmp_path / "data", fsync=False)
    listener = Listener()
    metrics = Uncounted()
    driver = RaftDriver(
        voters(),
        engine,
        listener,
        rng=random.Random(1),
        clock_ms=lambda: int(trio.current_time() * 1000),
        wall_ms=lambda: 0,
        tls=None,
        metrics=metrics,
        denials=Denials(metrics),
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(driver.run)
        await idle(driver)
        yield driver, listener, engine
        await driver.stop()
        nursery.cancel_scope.cancel()
    engine.close()


async def idle(driver: RaftDriver) -> None:
    """Until the driver has done every action it was given (a worker thread's write included)."""
    with trio.fail_after(10):
        while driver._executing or driver._actions:
            await trio.sleep(0.01)
        await trio.testing.wait_all_tasks_blocked()


def fetch_request() -> SendRequest:
    return SendRequest(NodeId(2), 99, rm.FetchRequest(None, NodeId(1), Epoch(0), 0, Epoch(0), -1, 0))


async def test_an_action_that_needs_no_waiting_is_done_at_once_while_the_driver_is_idle(
    running: tuple[RaftDriver, Listener, ControllerEngine],
) -> None:
    driver, listener, _ = running
    driver._enqueue([HighWatermark(5)])
    assert listener.heard == [("committed", 5)]  # before any other task ran


async def test_actions_after_one_that_must_wait_wait_for_it_in_order(
    running: tuple[RaftDriver, Listener, ControllerEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    driver, listener, _ = running
    order: list[str] = []
    persisted = trio.Event()

    async def persist(election: ElectionState) -> None:
        order.append("persist started")
        await persisted.wait()
        order.append("persist done")

    def submit(link: PeerLink, correlation_id: int, request: Any) -> None:
        order.append(f"send {correlation_id}")

    monkeypatch.setattr(driver, "_persist", persist)
    monkeypatch.setattr(PeerLink, "submit", submit)
    election = ElectionState(Epoch(7), None, NodeId(1))
    driver._enqueue([PersistQuorumState(election), fetch_request(), HighWatermark(3)])
    assert order == [] and listener.heard == []  # the first must wait: nothing is done at once
    await trio.testing.wait_all_tasks_blocked()
    assert order == ["persist started"]  # the request waits for the quorum-state to be written
    driver._enqueue([HighWatermark(4)])  # the executing task is busy: this one queues behind
    assert listener.heard == []
    persisted.set()
    await idle(driver)
    assert order == ["persist started", "persist done", "send 99"]
    assert listener.heard == [("committed", 3), ("committed", 4)]


async def test_a_truncation_waits_for_the_logs_readers(
    running: tuple[RaftDriver, Listener, ControllerEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    driver, _, engine = running
    truncated: list[int] = []
    monkeypatch.setattr(engine.log, "truncate_to", truncated.append)
    async with driver.stable_log():  # a standby replaying the log
        driver._enqueue([TruncateTo(0)])
        await trio.testing.wait_all_tasks_blocked()
        assert truncated == []
    await idle(driver)
    assert truncated == [0]


async def test_while_a_truncation_rewrites_the_log_no_reader_starts(
    running: tuple[RaftDriver, Listener, ControllerEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    driver, _, _ = running
    release = trio.Event()
    events: list[str] = []

    async def slow_truncate(fn: Any, *args: Any, **kwargs: Any) -> Any:
        events.append("truncating")
        await release.wait()
        events.append("truncated")

    monkeypatch.setattr(trio.to_thread, "run_sync", slow_truncate)
    driver._enqueue([TruncateTo(0)])
    await trio.testing.wait_all_tasks_blocked()

    async def reader() -> None:
        async with driver.stable_log():
            events.append("reading")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        assert events == ["truncating"]
        release.set()
    assert events == ["truncating", "truncated", "reading"]
