"""Socket types and which pairs may talk: the table libzmq enforces at handshake.

Rules (libzmq-wire-notes §2.2-2.4):

* :data:`COMPATIBLE` is the libzmq table, row by row; DGRAM is left out because it
  never runs over ZMTP. The table is symmetric.
* :data:`SENDS_IDENTITY` lists the only types that put an ``Identity`` property in
  their READY (sent even when empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = ["COMPATIBLE", "SENDS_IDENTITY", "SOCKET_TYPES", "is_compatible"]

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


def is_compatible(local: str, peer: str) -> bool:
    """Whether a ``local`` socket accepts a peer announcing Socket-Type ``peer``.

    Both names are compared exactly (upper case), as libzmq does; an unknown name on
    either side is simply not compatible.
    """
    return peer in COMPATIBLE.get(local, ())
