"""A failed commit stops the daemon, and the command line finds the LogError inside trio's groups."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import trio

from controller.engine import ControllerEngine
from controller.log import LogError
from controller.server.daemon import Daemon, DaemonOptions
from controller.stopping import find_failure
from protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationRequestListener
from protocol.registry import encode_request


def test_a_log_failure_is_found_inside_nested_exception_groups() -> None:
    failure = LogError("cannot append: disk full")
    nested = BaseExceptionGroup("outer", [ValueError("other"), ExceptionGroup("inner", [failure])])
    assert find_failure(nested, LogError) is failure
    assert find_failure(failure, LogError) is failure


def test_other_failures_are_not_mistaken_for_log_failures() -> None:
    assert find_failure(ExceptionGroup("g", [ValueError("x")]), LogError) is None
    assert find_failure(KeyboardInterrupt(), LogError) is None


async def test_a_failed_commit_stops_the_daemon_with_the_log_error(tmp_path: Path) -> None:
    """The write of a group fails: the state is ahead of the disk, so the daemon must stop."""
    engine = ControllerEngine.load(tmp_path / "data", fsync=False)

    def broken_write(prepared: object) -> int:
        raise LogError("cannot append to the segment: No space left on device")

    engine.write = broken_write  # type: ignore[method-assign]
    listener = BrokerRegistrationRequestListener(name="PLAINTEXT", host="127.0.0.1", port=1)
    registration = BrokerRegistrationRequest(
        broker_id=1, cluster_id=engine.core.config.cluster_id, incarnation_id=uuid.uuid4(), listeners=(listener,)
    )
    with pytest.raises(BaseException) as info:  # trio wraps the failure in exception groups
        async with trio.open_nursery() as nursery:
            port = await nursery.start(Daemon(engine, DaemonOptions(port=0)).run)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_all(encode_request(registration, 3, 1))  # records: a commit
            await trio.sleep(5)
    assert isinstance(find_failure(info.value, LogError), LogError)
