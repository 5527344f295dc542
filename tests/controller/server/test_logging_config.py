"""RateLimitedLogger: one message per key per interval, the next one counting what was suppressed."""

from __future__ import annotations

import logging

import pytest

from controller.server.logging_config import RateLimitedLogger


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records]


def test_first_message_per_key_is_emitted_then_suppressed_within_the_interval(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    limited = RateLimitedLogger(logging.getLogger("test.limited"), interval_s=10.0, clock=clock)
    with caplog.at_level(logging.WARNING):
        assert limited.log(logging.WARNING, "unknown_api", "refused %s", "a")
        clock.now += 9.9
        assert not limited.log(logging.WARNING, "unknown_api", "refused %s", "b")
        assert not limited.log(logging.WARNING, "unknown_api", "refused %s", "c")
        assert limited.log(logging.WARNING, "undecodable", "refused %s", "other key")  # keys are separate
    assert messages(caplog) == ["refused a", "refused other key"]
    assert all(record.levelno == logging.WARNING for record in caplog.records)


def test_the_next_emitted_message_says_how_many_were_suppressed_since_the_last(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    limited = RateLimitedLogger(logging.getLogger("test.limited"), interval_s=10.0, clock=clock)
    with caplog.at_level(logging.INFO):
        limited.log(logging.INFO, "k", "event %d", 1)
        for n in range(2, 6):
            clock.now += 1.0
            limited.log(logging.INFO, "k", "event %d", n)
        clock.now += 6.0  # 10 s after the first
        assert limited.log(logging.INFO, "k", "event %d", 6)
        clock.now += 10.0
        assert limited.log(logging.INFO, "k", "event %d", 7)  # nothing suppressed since: no count
    assert messages(caplog) == [
        "event 1",
        "event 6 (4 similar messages suppressed in the last 10.0 s)",
        "event 7",
    ]


def test_a_thousand_messages_within_an_interval_make_one_line(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    limited = RateLimitedLogger(logging.getLogger("test.limited"), clock=clock)
    with caplog.at_level(logging.WARNING):
        emitted = sum(limited.log(logging.WARNING, "k", "refused %d", n) for n in range(1000))
    assert emitted == 1 and len(caplog.records) == 1
