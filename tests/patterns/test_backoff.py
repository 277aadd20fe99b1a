"""The reconnect delays, as plain numbers: no clock, no I/O (``trizmq.patterns.backoff``)."""

from __future__ import annotations

import pytest

from trizmq.patterns.backoff import REFUSED_MAX, REFUSED_MIN, Backoff, Outcome

LOST, DONE, REFUSED = Outcome.LOST, Outcome.DONE, Outcome.REFUSED


def flat(low: float, high: float) -> float:
    """No jitter: the factor 1."""
    return 1.0


def waits(backoff: Backoff, *outcomes: Outcome) -> list[float]:
    return [backoff.next_wait(outcome) for outcome in outcomes]


def test_lost_attempts_wait_the_interval_without_a_cap() -> None:
    assert waits(Backoff(0.1, 0.0, flat), LOST, LOST, LOST) == [0.1, 0.1, 0.1]


def test_lost_attempts_double_up_to_the_cap() -> None:
    assert waits(Backoff(0.1, 0.5, flat), LOST, LOST, LOST, LOST, LOST) == pytest.approx(
        [0.1, 0.2, 0.4, 0.5, 0.5]
    )


def test_a_handshaken_connection_starts_the_doubling_afresh() -> None:
    backoff = Backoff(0.1, 1.0, flat)
    assert waits(backoff, LOST, LOST) == pytest.approx([0.1, 0.2])
    assert waits(backoff, DONE, LOST) == pytest.approx([0.1, 0.2])


def test_refusals_wait_at_least_a_second_doubling_to_thirty() -> None:
    backoff = Backoff(0.1, 0.0, flat)
    got = waits(backoff, *[REFUSED] * 7)
    assert got == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert got[0] == REFUSED_MIN and got[-1] == REFUSED_MAX


def test_refusal_floor_and_cap_follow_large_intervals() -> None:
    backoff = Backoff(5.0, 60.0, flat)
    assert waits(backoff, REFUSED, REFUSED, REFUSED, REFUSED) == [5.0, 10.0, 20.0, 40.0]
    assert waits(backoff, REFUSED, REFUSED) == [60.0, 60.0]


def test_a_done_connection_ends_a_run_of_refusals() -> None:
    backoff = Backoff(0.1, 0.0, flat)
    assert waits(backoff, REFUSED, REFUSED, DONE, REFUSED) == [1.0, 2.0, 0.1, 1.0]


def test_jitter_spreads_lost_attempts_both_ways_and_refusals_only_up() -> None:
    asked: list[tuple[float, float]] = []

    def jitter(low: float, high: float) -> float:
        asked.append((low, high))
        return high

    backoff = Backoff(0.1, 0.0, jitter)
    assert backoff.next_wait(LOST) == pytest.approx(0.11)
    assert backoff.next_wait(REFUSED) == pytest.approx(1.1)
    assert asked == [(0.9, 1.1), (1.0, 1.1)]
