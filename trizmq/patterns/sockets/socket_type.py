"""What a socket type decides, as one row: its strategy and every fact the layers ask of it.

Each strategy module states the row of each type it implements next to its strategy
class (``PUSH = SocketType(PushStrategy, peers={"PULL"}, conflate_out=True)``), and
``table.py`` gathers the rows into the one table of socket types. Every layer reads
a type's facts from its row, handed down to it, never from a list of type names of
its own: the handshake the peer types it accepts (``zmtp.Connection``), the
options the types it fits (``_options``), the peer queues whether ``conflate``
applies and to which direction (``nursery.pipe``), the counts whether a message
refused at a peer's mark is a drop (``nursery.counting``), the transports which
codec frames its bytes and whether it goes over udp. Adding a socket type is its
strategy, its row and its public class (``docs/architecture.md``, "A new socket
type"); ``tests/test_socket_type_recipe.py`` defines one that way and runs it.

Rules:

* The peer types are RFC 23's table (libzmq-wire-notes §2.4): compared exactly, and
  symmetric across the rows (a test holds it).
* The options a type takes beyond those every socket takes are its ``options``, plus
  what its other facts imply: ``conflate`` where a direction conflates, the bounds
  of subscriptions kept where it publishes, ``max_subscription_bytes`` where its
  peers subscribe to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from .base import SocketStrategy

__all__ = ["SocketType"]

#: the options of a type that publishes (keeps its peers' subscriptions or joins), by
#: the strategy attribute each sets (the bounds per peer and for all peers together)
PUBLISHER_OPTION_FIELDS: Mapping[str, str] = MappingProxyType(
    {"max_subscriptions": "_max_per_peer", "max_subscriptions_total": "_max_total"}
)
PUBLISHER_OPTIONS = frozenset(PUBLISHER_OPTION_FIELDS)
#: the options of a type whose peers subscribe to it (SUBSCRIBE/CANCEL commands)
SUBSCRIBED_OPTIONS = frozenset({"max_subscription_bytes"})


def _names(value: Iterable[str]) -> frozenset[str]:
    return frozenset(value)


@attrs.frozen
class SocketType:
    """One socket type's row: its strategy and what the other layers ask of it.

    Args:
        strategy: the routing strategy (``patterns.sockets``); its ``socket_type``
            is the type's ZMTP name.
        peers: the Socket-Types of the peers it accepts at the handshake.
        drops_at_hwm: a message refused at a peer's high-water mark is dropped and
            counted so (PUB, XPUB, RADIO, REP, ROUTER, XSUB); elsewhere a send waits,
            or a non-blocking one raises ``trio.WouldBlock``: an error, not a drop.
        conflate_out, conflate_in: ``conflate`` applies to the peers' outgoing /
            incoming queues, the direction that carries the type's messages.
        publishes: it keeps what its peers subscribe to or join (bounded by the
            ``max_subscriptions`` options).
        takes_subscriptions: its peers subscribe to it (SUBSCRIBE/CANCEL, or the
            ``\\x01``/``\\x00`` messages), bounded by ``max_subscription_bytes``.
        sends_identity: its READY carries an Identity property (even empty).
        codec: ``"zmtp"``, or ``"raw"`` for a type whose peers speak no ZMTP at all
            (STREAM: every read is a message).
        udp: ``"bind"`` or ``"connect"`` for the type that may do so over udp://
            (DISH binds, RADIO connects); ``""`` for the others.
        addressed: its messages carry a group or routing id outside their frames
            (a proxy forwarding frames alone would lose it).
        own_options: the options of its own beyond those every socket takes and
            those its other facts imply (:attr:`options` is both: see the module
            docstring).
    """

    strategy: type[SocketStrategy]
    peers: frozenset[str] = attrs.field(converter=_names)
    drops_at_hwm: bool = False
    conflate_out: bool = False
    conflate_in: bool = False
    publishes: bool = False
    takes_subscriptions: bool = False
    sends_identity: bool = False
    codec: str = "zmtp"
    udp: str = ""
    addressed: bool = False
    own_options: frozenset[str] = attrs.field(default=frozenset(), converter=_names)

    @property
    def name(self) -> str:
        """The ZMTP Socket-Type (its strategy's)."""
        return self.strategy.socket_type

    @property
    def options(self) -> frozenset[str]:
        """Every option that applies to this type alone or to a few: its own, and
        those its facts imply."""
        implied: set[str] = set()
        if self.conflate_out or self.conflate_in:
            implied.add("conflate")
        if self.publishes:
            implied |= PUBLISHER_OPTIONS
        if self.takes_subscriptions:
            implied |= SUBSCRIBED_OPTIONS
        return self.own_options | implied

    def handshake_facts(self) -> dict[str, Any]:
        """What a ZMTP codec of this type is told (``zmtp.Connection``'s keywords):
        the peer types it accepts, whether it sends an Identity, whether its peers
        subscribe to it."""
        return {
            "peers": self.peers,
            "sends_identity": self.sends_identity,
            "takes_subscriptions": self.takes_subscriptions,
        }

    def accepts(self, peer_type: str) -> bool:
        """Whether a peer announcing Socket-Type ``peer_type`` may talk to this type
        (compared exactly, as libzmq does)."""
        return peer_type in self.peers
