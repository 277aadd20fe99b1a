"""The thread-safe draft family: CLIENT/SERVER (41), SCATTER/GATHER (49), PEER (51), CHANNEL (52).

Every type of this family is single-part (the RFCs: "MUST NOT allow multipart
messages"). The runtime refuses a multipart send (see :func:`check_single_part`,
libzmq's EINVAL); a multipart message read from a peer is discarded whole.

Internal message forms:

* CLIENT, SCATTER, GATHER, CHANNEL: ``[body]``.
* SERVER and PEER: ``[routing_id, body]`` both ways, ``routing_id`` being the peer's
  id as 4 big-endian bytes (:func:`pack_routing_id`/:func:`unpack_routing_id`).
  The id never goes on the wire; the runtime turns it into ``Message.routing_id``
  (an int) on receive and takes it from ``send(data, routing_id=...)``.

Rules:

* CLIENT round-robins out over peers that can take a message and waits when none
  can; it fair-queues in. SCATTER is the same without input, GATHER fair-queues
  without output (PUSH/PULL-like).
* CHANNEL has at most one peer (PAIR-like: a second one is refused) and waits
  while there is none or its pipe is full.
* SERVER and PEER give each attached peer (each double queue) a local routing id,
  a non-zero uint32 counting up from a random start as libzmq does, skipping ids
  in use. The id is assigned on attach and kept across reconnects of the same
  queue; it is released when the peer is detached and its input is read. Sending
  to an unknown id raises :class:`~trizmq.HostUnreachable` (RFC 41/51 "SHALL return
  an error if the queue does not exist"; libzmq's EHOSTUNREACH); sending to a full
  peer waits (returns False), as RFC 41 and libzmq do.
* PEER: the runtime attaches the peer it creates for ``connect_peer`` and then
  asks :meth:`ServerStrategy.routing_id_of` for its id, which is valid at once
  (the queue exists before the connection does).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from ..._errors import HostUnreachable
from .base import Message, PeerLike, SocketStrategy, Wake
from .pair import PairStrategy
from .pipeline import RoundRobinOut
from .socket_type import SocketType

if TYPE_CHECKING:
    from ..._options import Options

#: our own generator: ids never disturb (nor depend on) the application's random state
_IDS = random.Random()

__all__ = [
    "CHANNEL",
    "CLIENT",
    "GATHER",
    "PEER",
    "SCATTER",
    "SERVER",
    "ChannelStrategy",
    "ClientStrategy",
    "GatherStrategy",
    "PeerStrategy",
    "ScatterStrategy",
    "ServerStrategy",
    "SinglePart",
    "check_single_part",
    "pack_routing_id",
    "unpack_routing_id",
]

_MAX_ID = 0xFFFFFFFF


def check_single_part(frames: Sequence[object], socket_type: str = "this socket") -> None:
    """Raise ValueError unless ``frames`` is exactly one frame (the family's rule)."""
    if len(frames) != 1:
        raise ValueError(
            f"{socket_type} does not allow multipart messages (got {len(frames)} frames)"
        )


def pack_routing_id(routing_id: int) -> bytes:
    """The internal 4-byte form of a routing id; ValueError outside 1..2**32-1."""
    if not isinstance(routing_id, int) or isinstance(routing_id, bool):
        raise TypeError(f"a routing id is an int, not {type(routing_id).__name__}")
    if not 0 < routing_id <= _MAX_ID:
        raise ValueError(f"a routing id is a non-zero 32-bit unsigned int, got {routing_id}")
    return routing_id.to_bytes(4, "big")


def unpack_routing_id(frame: bytes) -> int:
    """The int of an internal routing id frame."""
    return int.from_bytes(frame, "big")


class SinglePart(SocketStrategy):
    """The family's rule, mixed in before the strategy that routes: a send of more
    than one frame raises (:func:`check_single_part`), and a multipart message from a
    peer is not accepted (it is discarded whole)."""

    def send(self, msg: Message) -> bool:
        check_single_part(msg, self.socket_type)
        return super().send(msg)

    def accept(self, peer: PeerLike, msg: Message) -> bool:
        return len(msg) == 1


class ClientStrategy(SinglePart, RoundRobinOut):
    """Round-robin out, fair-queue in, single-part."""

    socket_type = "CLIENT"


class ScatterStrategy(ClientStrategy):
    """Round-robin out, single-part; no input."""

    socket_type = "SCATTER"
    can_recv = False

    def recv(self) -> Message | None:
        raise NotImplementedError


class GatherStrategy(SinglePart):
    """Fair-queue in, single-part; no output (its send is the base's, which raises)."""

    socket_type = "GATHER"


class ChannelStrategy(SinglePart, PairStrategy):
    """One exclusive peer, single-part, both ways (a thread-safe PAIR)."""

    socket_type = "CHANNEL"


class ServerStrategy(SocketStrategy):
    """Routing by local uint32 ids: ``[routing_id, body]`` in and out."""

    socket_type = "SERVER"
    can_send = True
    OPTION_FIELDS: ClassVar[dict[str, str]] = {
        **SocketStrategy.OPTION_FIELDS,
        "disconnect_msg": "farewell",
    }
    #: disconnect_msg: received, with the peer's routing id, when a connected peer
    #: goes (libzmq's draft option)
    farewell: bytes | None

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        #: messages made here for the application (disconnect_msg), read first
        self.local: deque[Message] = deque()
        #: peers a connection carries now (each owed one disconnect_msg)
        self._live: set[PeerLike] = set()
        #: routable peers by id (attached ones)
        self.routes: dict[int, PeerLike] = {}
        #: the id of every peer still attached or with unread input
        self.ids: dict[PeerLike, int] = {}
        self.next_id = _IDS.getrandbits(32)
        self.dropped = 0

    def shown_routing_id(self, peer: PeerLike) -> bytes | None:
        rid = self.ids.get(peer)
        return None if rid is None else rid.to_bytes(4, "big")

    def generate_id(self) -> int:
        """A fresh non-zero id not in use, counting up as libzmq does."""
        while True:
            rid = self.next_id
            self.next_id = (rid + 1) & _MAX_ID
            if rid and rid not in self.routes:
                return rid

    def attach(self, peer: PeerLike) -> bool:
        if peer not in self.ids:
            rid = self.generate_id()
            self.ids[peer] = rid
            self.routes[rid] = peer
        return super().attach(peer)

    def connected(self, peer: PeerLike) -> None:
        self._live.add(peer)
        super().connected(peer)

    def disconnected(self, peer: PeerLike) -> None:
        # a kept (connecting) PEER's connection ended: it keeps its id and route
        self._farewell(peer)

    def _farewell(self, peer: PeerLike) -> None:
        if peer not in self._live:
            return
        self._live.discard(peer)
        rid = self.ids.get(peer)
        if self.farewell is not None and rid is not None:
            was_empty = not self.local
            self.local.append([rid.to_bytes(4, "big"), self.farewell])
            if was_empty:
                self.readable()

    def detach(self, peer: PeerLike) -> None:
        rid = self.ids.get(peer)
        self._farewell(peer)
        if rid is not None and self.routes.get(rid) is peer:
            del self.routes[rid]
        if not peer.in_pipe:
            self.ids.pop(peer, None)
        super().detach(peer)

    def routing_id_of(self, peer: PeerLike) -> int:
        """The routing id of an attached ``peer`` (PEER's ``connect_peer`` returns it)."""
        try:
            return self.ids[peer]
        except KeyError:
            raise ValueError(f"{peer!r} is not attached") from None

    def peer_of(self, routing_id: int) -> PeerLike | None:
        """The attached peer with ``routing_id``, or None."""
        return self.routes.get(routing_id)

    def send(self, msg: Message) -> bool:
        if len(msg) != 2:
            raise ValueError(f"a {self.socket_type} message is [routing_id, body]")
        rid = unpack_routing_id(msg[0])
        peer = self.routes.get(rid)
        if peer is None:
            self.no_route += 1
            raise HostUnreachable(f"no peer with routing id {rid}")
        pipe = peer.out_pipe
        if pipe.full:
            return False
        pipe.put([msg[1]])
        return True

    def recv(self) -> Message | None:
        if self.local:
            return self.local.popleft()
        inbound = self.inbound
        poll = inbound.poll
        while (item := poll()) is not None:
            peer = inbound.source
            rid = self.ids.get(peer)
            if peer not in inbound and rid is not None and self.routes.get(rid) is not peer:
                # read to the end after it left: its id is free again
                del self.ids[peer]
            if rid is None or item.__class__ is not list:
                self.discard(peer, item)
                continue
            if len(item) != 1:
                self.dropped += 1
                self.discard(peer, item)
                continue
            return [rid.to_bytes(4, "big"), item[0]]
        return None

    def statistics(self) -> dict[str, int]:
        return {"peers": len(self.inbound), "routes": len(self.routes), "dropped": self.dropped}


class PeerStrategy(ServerStrategy):
    """SERVER's routing among PEER sockets; ``connect_peer`` uses :meth:`routing_id_of`."""

    socket_type = "PEER"


#: the rows of the socket-type table
CLIENT = SocketType(ClientStrategy, peers={"SERVER"}, own_options={"hello_msg"})
SERVER = SocketType(
    ServerStrategy, peers={"CLIENT"}, addressed=True, own_options={"hello_msg", "disconnect_msg"}
)
SCATTER = SocketType(ScatterStrategy, peers={"GATHER"})
GATHER = SocketType(GatherStrategy, peers={"SCATTER"})
CHANNEL = SocketType(ChannelStrategy, peers={"CHANNEL"})
PEER = SocketType(
    PeerStrategy, peers={"PEER"}, addressed=True, own_options={"hello_msg", "disconnect_msg"}
)
