"""Reconnect delays: how long a connecter waits before its next attempt.

One job: the back-off arithmetic of a connecting socket, synchronous and free of
I/O and clocks, so it is tested with plain numbers.

Rules:

* A lost attempt (refused connect, a handshake that timed out or broke) waits
  ``reconnect_ivl``, doubling after each lost attempt up to ``reconnect_ivl_max``
  when that is larger (libzmq's ZMQ_RECONNECT_IVL_MAX); a connection that was
  handshaken starts the doubling afresh.
* A refused handshake (the peer broke the protocol, or refused us: wrong socket
  type, credentials, a PAIR already paired) waits at least :data:`REFUSED_MIN`,
  doubling with each refusal in a row up to :data:`REFUSED_MAX` (or the cap, if
  larger), so that a misconfigured client never retries in a tight loop.
* Jitter spreads a crowd of clients that lost the same server: ±10 % around the
  delay, and only upwards (0 to +10 %) after a refusal, which stays at least
  :data:`REFUSED_MIN`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable

__all__ = ["REFUSED_MAX", "REFUSED_MIN", "Backoff", "Outcome"]

#: a refused handshake is retried no sooner than this, doubling up to REFUSED_MAX
REFUSED_MIN = 1.0
REFUSED_MAX = 30.0


class Outcome(enum.Enum):
    """How one connection attempt ended."""

    #: never handshaken: refused connect, timeout, closed during the handshake
    LOST = "lost"
    #: handshaken, then lost or closed
    DONE = "done"
    #: the peer broke the protocol or was incompatible
    REFUSED = "refused"


class Backoff:
    """The delays of one connecter, attempt after attempt.

    ``jitter(low, high)`` returns a factor between ``low`` and ``high`` (a
    ``random.Random().uniform`` in the runtime; a constant in tests).
    """

    __slots__ = ("_cap", "_delay", "_ivl", "_jitter", "_refused")

    def __init__(self, ivl: float, cap: float, jitter: Callable[[float, float], float]) -> None:
        self._ivl = ivl
        self._cap = cap
        self._jitter = jitter
        #: the wait after the next lost attempt
        self._delay = ivl
        #: the wait after the last refusal in a row (0 when the last attempt was not one)
        self._refused = 0.0

    def next_wait(self, outcome: Outcome) -> float:
        """Seconds to wait after an attempt that ended with ``outcome``."""
        ivl, cap = self._ivl, self._cap
        if outcome is Outcome.REFUSED:
            self._refused = min(max(REFUSED_MIN, ivl, self._refused * 2), max(REFUSED_MAX, cap))
            return self._refused * self._jitter(1.0, 1.1)
        if outcome is Outcome.DONE:
            self._delay, self._refused = ivl, 0.0
        wait = self._delay
        if cap > ivl:
            self._delay = min(self._delay * 2, cap)
        return wait * self._jitter(0.9, 1.1)
