"""Snapshots of sockets' counters, taken in each socket's own trio run, from any thread.

An exporter reads ``sock.stats()`` at scrape time. The scrape may run in another
thread (``prometheus_client``'s HTTP server, an OpenTelemetry periodic reader), while
the socket's counters and peer table change in its trio run's thread. So:

Rules:

* From the socket's own run (the thread that runs it), ``stats()`` is called
  directly: the snapshot is one synchronous call, consistent by construction.
* From anywhere else, the snapshots of every socket of one run are taken by one job
  handed to that run (``TrioToken.run_sync_soon``) and awaited with a deadline
  (:data:`SNAPSHOT_TIMEOUT`): a run too busy to answer in time leaves its sockets
  out of that scrape rather than block it for ever; a run that has ended leaves
  its sockets out for good.
* A closed socket, or one whose ``stats()`` refuses (closed meanwhile), has no
  snapshot: its series disappear from the scrape.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import trio

from .._open_sockets import Observed
from .._stats import SocketStats

__all__ = [
    "SNAPSHOT_TIMEOUT",
    "Observed",
    "failure_causes",
    "max_rtt",
    "mean_rtt",
    "take",
    "zap_statuses",
]

#: seconds a scrape from another thread waits for a socket's run to take its snapshots
SNAPSHOT_TIMEOUT = 5.0


def _take_one(sock: Observed) -> SocketStats | None:
    if sock.closed:
        return None
    try:
        return sock.stats()
    except (trio.ClosedResourceError, RuntimeError):
        return None  # closed by its run meanwhile


def _current_token() -> trio.lowlevel.TrioToken | None:
    try:
        return trio.lowlevel.current_trio_token()
    except RuntimeError:
        return None


def take(
    sockets: Sequence[Observed], timeout: float = SNAPSHOT_TIMEOUT
) -> list[SocketStats | None]:
    """Each socket's snapshot, or None where it has none (closed, or its run busy).

    Args:
        sockets: the sockets, each with ``closed`` and ``stats()``; a socket entered
            in a trio run is read in that run (its ``_trio_token``).
        timeout: seconds to wait for another thread's run to answer.

    Returns:
        One entry per socket, in order.
    """
    results: list[SocketStats | None] = [None] * len(sockets)
    here = _current_token()
    elsewhere: dict[trio.lowlevel.TrioToken, list[int]] = {}
    for index, sock in enumerate(sockets):
        token: trio.lowlevel.TrioToken | None = getattr(sock, "_trio_token", None)
        if token is None or token is here:
            results[index] = _take_one(sock)
        else:
            elsewhere.setdefault(token, []).append(index)
    pending: list[tuple[threading.Event, dict[int, SocketStats | None]]] = []
    for token, indices in elsewhere.items():
        done = threading.Event()
        taken: dict[int, SocketStats | None] = {}

        def job(
            indices: list[int] = indices,
            taken: dict[int, SocketStats | None] = taken,
            done: threading.Event = done,
        ) -> None:
            try:
                for i in indices:
                    taken[i] = _take_one(sockets[i])
            finally:
                done.set()

        try:
            token.run_sync_soon(job)
        except trio.RunFinishedError:
            continue  # that run has ended: its sockets are closed
        pending.append((done, taken))
    for done, taken in pending:
        # one deadline per run, waited in turn: the runs work meanwhile in parallel
        if done.wait(timeout):
            for i, stats in taken.items():
                results[i] = stats
    return results


# -- readings every exporter makes of a snapshot ------------------------------------------
def mean_rtt(stats: SocketStats) -> float | None:
    """The mean over the peers of their smoothed round trip, or None where none measured."""
    samples = [p.rtt_mean for p in stats.peers if p.rtt_mean is not None]
    return sum(samples) / len(samples) if samples else None


def max_rtt(stats: SocketStats) -> float | None:
    """The longest last round trip among the peers, or None where none measured."""
    samples = [p.rtt for p in stats.peers if p.rtt is not None]
    return max(samples) if samples else None


def failure_causes(causes: Mapping[str, int]) -> dict[str, int]:
    """Handshake failures by cause, without the ``zap_<status>`` detail (no double count)."""
    return {k: v for k, v in causes.items() if not k.startswith("zap_")}


def zap_statuses(causes: Mapping[str, int]) -> dict[str, int]:
    """ZAP refusals by status code (``"400"``), from the ``zap_<status>`` causes."""
    return {k[4:]: v for k, v in causes.items() if k.startswith("zap_")}
