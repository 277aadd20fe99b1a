"""Socket types and which pairs may talk: the table libzmq enforces at handshake.

Rules (libzmq-wire-notes §2.2-2.4):

* :data:`COMPATIBLE` is the libzmq table, row by row; DGRAM is left out because it
  never runs over ZMTP. The table is symmetric.
* :data:`SENDS_IDENTITY` lists the only types that put an ``Identity`` property in
  their READY (sent even when empty).
* :data:`TAKES_SUBSCRIPTIONS` lists the types whose peers subscribe to them
  (SUBSCRIBE/CANCEL commands, ``\\x01``/``\\x00`` messages): where a connection's
  ``max_subscription`` applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["COMPATIBLE", "SENDS_IDENTITY", "SOCKET_TYPES", "TAKES_SUBSCRIPTIONS", "is_compatible"]

COMPATIBLE: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "REQ": frozenset({"REP", "ROUTER"}),
        "REP": frozenset({"REQ", "DEALER"}),
        "DEALER": frozenset({"REP", "DEALER", "ROUTER"}),
        "ROUTER": frozenset({"REQ", "DEALER", "ROUTER"}),
        "PUB": frozenset({"SUB", "XSUB"}),
        "XPUB": frozenset({"SUB", "XSUB"}),
        "SUB": frozenset({"PUB", "XPUB"}),
        "XSUB": frozenset({"PUB", "XPUB"}),
        "PUSH": frozenset({"PULL"}),
        "PULL": frozenset({"PUSH"}),
        "PAIR": frozenset({"PAIR"}),
        "SERVER": frozenset({"CLIENT"}),
        "CLIENT": frozenset({"SERVER"}),
        "RADIO": frozenset({"DISH"}),
        "DISH": frozenset({"RADIO"}),
        "SCATTER": frozenset({"GATHER"}),
        "GATHER": frozenset({"SCATTER"}),
        "PEER": frozenset({"PEER"}),
        "CHANNEL": frozenset({"CHANNEL"}),
    }
)

SOCKET_TYPES: frozenset[str] = frozenset(COMPATIBLE)

SENDS_IDENTITY: frozenset[str] = frozenset({"REQ", "DEALER", "ROUTER"})

TAKES_SUBSCRIPTIONS: frozenset[str] = frozenset({"PUB", "XPUB"})


def is_compatible(local: str, peer: str) -> bool:
    """Whether a ``local`` socket accepts a peer announcing Socket-Type ``peer``.

    Both names are compared exactly (upper case), as libzmq does; an unknown name on
    either side is simply not compatible.
    """
    return peer in COMPATIBLE.get(local, ())
