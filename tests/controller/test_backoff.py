"""The controller's retry backoff (controller.backoff)."""

from __future__ import annotations

from controller.backoff import exponential_backoff


def test_the_delay_doubles_from_the_initial_one_up_to_the_cap() -> None:
    assert [exponential_backoff(50, 1000, failures) for failures in range(1, 8)] == [50, 100, 200, 400, 800, 1000, 1000]


def test_no_failure_yet_waits_the_initial_delay_and_a_long_streak_stays_finite() -> None:
    assert exponential_backoff(0.1, 10.0, 0) == 0.1
    assert exponential_backoff(0.1, 10.0, 10**6) == 10.0
