"""What a publisher refuses of its peers' subscriptions (PUB, XPUB) or joins (RADIO).

Each refusal is counted (``statistics()``, the metrics); the first of each peer is
logged, the others only counted: a peer that floods its publisher with subscriptions
past the bounds must not flood the log as well.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .base import PeerLike

__all__ = ["Refusals"]

log = logging.getLogger("trizmq")


class Refusals:
    """The refusals of one publisher: their count, and the peers already logged."""

    __slots__ = ("_logged", "_what", "count")

    def __init__(self, what: str) -> None:
        #: what is refused, as the log line says it ("subscriptions", "joins")
        self._what = what
        self.count = 0
        self._logged: set[PeerLike] = set()

    def refuse(self, peer: PeerLike, why: str, *args: object) -> None:
        """Count one refusal of ``peer``; log it if it is the peer's first.

        Args:
            peer: the peer refused.
            why: the reason, a %-format of ``args`` (formatted only when logged).
            *args: the values of ``why``.
        """
        self.count += 1
        if peer not in self._logged:
            self._logged.add(peer)
            log.warning(
                "%r: %s refused (" + why + "); further refusals of this peer are counted, "
                "not logged",
                peer,
                self._what,
                *args,
            )

    def forget(self, peer: PeerLike) -> None:
        """``peer`` left: a new connection of it is logged again."""
        self._logged.discard(peer)
