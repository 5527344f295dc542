"""stale-resent end to end: the daemon's control channel (controller.control.channel) delivers
to a fleet broker's listener over TCP, which journals what it refuses as stale; the real channel
never sends a refused request again, and one that does is reported. The fleet cannot provoke a
stale refusal from a correct controller (it drops orders for older broker epochs before sending),
so this is where the rule meets the real channel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from broker_sim.check import CheckResult, check
from broker_sim.journal import ControlRefused, read_journal
from controller.control.channel import ControlChannel
from controller.control.orders import BrokerTarget
from protocol.error_codes import ErrorCode

from ..shell.test_control_epochs import BROKER_ID, order, runner
from .logs import LogBuilder

STALE = (ErrorCode.STALE_BROKER_EPOCH, ErrorCode.STALE_CONTROLLER_EPOCH)


async def deliver(tmp_path: Path) -> tuple[CheckResult, list[int]]:
    """An order of controller epoch 5, then of epoch 4 (refused as stale), then of 5 again, through one
    channel to one listener; the check of the journal the listener's broker wrote, and its refusals."""
    journal = tmp_path / "journal.jsonl"
    broker = runner(journal)
    listener = broker.new_listener()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(listener.serve)
        channel = ControlChannel(
            controller_id=3000, broker_address=lambda broker_id: BrokerTarget("127.0.0.1", port, 100)
        )
        await nursery.start(channel.run)
        for controller_epoch in (5, 4, 5):
            channel.submit([order(controller_epoch)])
            with trio.fail_after(5):
                while channel.queue_depth(BROKER_ID):
                    await trio.sleep(0.01)
        nursery.cancel_scope.cancel()
    broker.ctx.recorder.writer.close()  # type: ignore[union-attr]
    entries = list(read_journal(journal))
    log = LogBuilder(tmp_path / "data")
    log.cluster()
    log.write()
    return check(tmp_path / "data", entries), [e.error for e in entries if isinstance(e, ControlRefused)]


async def test_the_daemons_channel_never_resends_a_request_refused_as_stale(tmp_path: Path) -> None:
    result, refusals = await deliver(tmp_path)
    assert refusals == [ErrorCode.STALE_CONTROLLER_EPOCH]
    assert result.violation_counts == {} and result.counts["judged stale-resent"] == 1


async def test_a_channel_that_resends_a_refused_request_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def send_batch(self: Any, link: Any, conn: Any, versions: Any) -> None:
        """The channel's own, then each request refused as stale sent once more on the connection."""
        plans = await self._planner.plan(link, conn, versions)
        await self._send(conn, [request for _, requests in plans for request in requests])
        again = []
        for the_order, requests in plans:
            for request in requests:
                response = await self._receive(conn, request)
                self.outcomes.response(link.broker_id, the_order, request.api_key, request.version, response)
                if getattr(response, "error_code", 0) in STALE:
                    again.append(request)
            if link.queue and link.queue[0] is the_order:
                link.queue.popleft()
        for request in again:
            await self._send(conn, [request])
            await self._receive(conn, request)

    monkeypatch.setattr(ControlChannel, "_send_batch", send_batch)
    result, refusals = await deliver(tmp_path)
    assert refusals == [ErrorCode.STALE_CONTROLLER_EPOCH] * 2
    assert result.violation_counts == {"stale-resent": 1}
