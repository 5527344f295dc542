"""The engine as a standby: `load` the snapshot, `catch_up` the log to a committed
offset in as many steps as replication gives, `activate` when elected.

A standby's state at offset N must be what a controller had at N, however the catch-up is cut
(a metadata transaction across a cut is held until its End), and activation must refuse a state
behind the log and close what the previous controller left open.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from controller.engine import FAILOVER_ABORT_REASON, ControllerEngine, NotActiveError
from controller.slices import finish
from protocol.records.metadata import AbortTransactionRecord

from .test_engine import workload
from .test_transactions import BEGIN, append, cluster, topic_records


def load(data_dir: Path) -> ControllerEngine:
    return ControllerEngine.load(data_dir, fsync=False)


def test_a_standby_caught_up_in_any_steps_holds_what_the_controller_held_at_that_offset(tmp_path: Path) -> None:
    engine = ControllerEngine.start(tmp_path, fsync=False, now_ns=0, rng=random.Random(5))
    views = workload(engine, rounds=2)
    engine.close()
    rng = random.Random(21)
    for _ in range(3):
        standby = load(tmp_path)
        for end_offset, view in views:
            while standby.core.state.last_offset < end_offset - 1:  # random cuts up to the commit
                cut = rng.randint(standby.core.state.last_offset + 1, end_offset)
                finish(standby.catch_up(cut))
            assert standby.core.durable_view() == view
        standby.close()


def test_a_transaction_across_a_cut_is_held_until_its_end(tmp_path: Path) -> None:
    cluster(tmp_path)
    offsets = append(tmp_path, [BEGIN, *topic_records(), [(AbortTransactionRecord(reason="x"), 0)]])
    standby = load(tmp_path)
    finish(standby.catch_up(offsets[-2] + 1))  # every record of the transaction, not its end
    assert set(standby.core.state.replication.names) == {"orders"}
    finish(standby.catch_up(standby.log.next_offset))
    assert set(standby.core.state.replication.names) == {"orders"}  # aborted: never applied
    standby.close()


def test_activation_needs_the_whole_log_and_aborts_what_the_previous_controller_left_open(tmp_path: Path) -> None:
    cluster(tmp_path)
    append(tmp_path, [BEGIN, *topic_records()])  # the previous controller died before the End
    standby = load(tmp_path)
    finish(standby.catch_up(standby.log.next_offset - 1))
    with pytest.raises(RuntimeError, match="cannot activate"):
        standby.activate(0)
    finish(standby.catch_up(standby.log.next_offset))
    standby.activate(0)
    assert standby.startup.aborted is not None and "('held')" in standby.startup.aborted
    work = standby.commit()
    assert work is not None
    standby.write(finish(work))
    last = list(standby.log.read(standby.log.next_offset - 1))
    assert [entry.record for entry in last] == [AbortTransactionRecord(reason=FAILOVER_ABORT_REASON)]
    standby.close()


def test_a_resigning_controller_goes_back_to_the_committed_state(tmp_path: Path) -> None:
    engine = ControllerEngine.start(tmp_path, fsync=False, now_ns=0, rng=random.Random(5))
    views = workload(engine, rounds=1)
    committed_end, committed_view = views[-1]
    finish(engine.decide(*_create("later")))  # decided and staged, never committed
    assert engine.core.durable_view() != committed_view
    engine.resign()
    assert not engine.active
    with pytest.raises(NotActiveError, match="a standby decides nothing"):
        finish(engine.decide(*_create("refused")))  # type: ignore[arg-type]
    finish(engine.catch_up(committed_end))
    assert engine.core.durable_view() == committed_view
    assert engine.commit() is None  # what was staged is gone with the old state
    engine.close()


def _create(name: str) -> tuple[int, int, object, int]:
    from protocol.messages.create_topics import CreateTopicsRequest, CreateTopicsRequestCreatableTopic

    topic = CreateTopicsRequestCreatableTopic(name=name, num_partitions=1, replication_factor=3)
    return 19, 7, CreateTopicsRequest(topics=(topic,)), 0


def test_a_state_rebuilt_in_two_parts_is_the_engines_only_once_installed(tmp_path: Path) -> None:
    """The shell builds the new core in a worker thread (`fresh_core`) while the engine stays as it
    was, and swaps it in on the event loop (`install`): the same end as `resign`."""
    engine = ControllerEngine.start(tmp_path, fsync=False, now_ns=0, rng=random.Random(5))
    views = workload(engine, rounds=1)
    committed_end, committed_view = views[-1]
    finish(engine.decide(*_create("later")))  # decided and staged, never committed
    assert engine.stand_down() and not engine.active
    assert not engine.stand_down()  # a standby only stops
    old, term = engine.core, engine.term
    fresh = engine.fresh_core()
    assert engine.core is old and engine.core.durable_view() != committed_view  # built aside
    engine.install(fresh)
    assert engine.core is fresh[0] and engine.term > term
    finish(engine.catch_up(committed_end))
    assert engine.core.durable_view() == committed_view
    assert engine.commit() is None
    engine.close()
