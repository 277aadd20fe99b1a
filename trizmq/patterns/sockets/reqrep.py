"""REQ, REP, DEALER and ROUTER (28/REQREP), with libzmq's options.

Rules:

* DEALER round-robins out over peers that can take a message (and waits when none
  can) and fair-queues in; it never changes a message.
* ROUTER prefixes each incoming message with the routing id of the peer it came
  from, and routes each outgoing message by its first frame. A peer announces its
  id in the Identity property; otherwise the ROUTER makes one as libzmq does
  (``00`` + a 32-bit counter from a random start); an announced id that starts with
  a zero byte is reserved for those and treated as none. An id already held by a live
  peer leaves the newcomer unrouted (its messages are dropped) unless
  ``router_handover`` is set, in which case the newcomer takes the id and the old
  peer is disconnected. An unknown id is dropped silently, or raises
  ``HostUnreachable`` with ``router_mandatory``; a full peer is dropped silently,
  or makes the sender wait with ``router_mandatory``.
* REQ prefixes the empty delimiter (and, with ``req_correlate``, a 4-byte request
  id before it), round-robins requests, and alternates strictly: send, then
  receive (``StateError`` otherwise). It accepts a reply only from the peer it
  asked (and with the matching request id); anything else is dropped silently.
  ``req_relaxed`` allows a new request while one is pending: the old reply will
  then be ignored.
* REP fair-queues requests, keeps the envelope (every frame up to and including
  the empty delimiter) and puts it back on the reply, which goes to the peer the
  request came from, or nowhere if that peer has gone or is full (REP never blocks).
* ``probe_router`` (REQ, DEALER, ROUTER) sends an empty message on every new
  connection.
"""

from __future__ import annotations

import random
import struct
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

from ..._errors import HostUnreachable, StateError
from .base import Message, PeerLike, SocketStrategy, Wake
from .pipeline import RoundRobinOut
from .socket_type import SocketType

if TYPE_CHECKING:
    from ..._options import Options

#: our own generator: ids never disturb (nor depend on) the application's random state
_IDS = random.Random()

__all__ = [
    "DEALER",
    "REP",
    "REQ",
    "ROUTER",
    "DealerStrategy",
    "RepStrategy",
    "ReqStrategy",
    "RouterStrategy",
]

_REQUEST_ID = struct.Struct("!I")


class DealerStrategy(RoundRobinOut):
    """Round-robin out, fair-queue in, no envelope change."""

    socket_type = "DEALER"
    OPTION_FIELDS: ClassVar[dict[str, str]] = {
        **SocketStrategy.OPTION_FIELDS,
        "probe_router": "probe",
    }
    #: probe_router: an empty message to every new connection
    probe: bool

    def connected(self, peer: PeerLike) -> None:
        if self.probe:
            peer.out_pipe.put([b""])
        super().connected(peer)


class ReqStrategy(DealerStrategy):
    """Lock-step requests with the empty delimiter."""

    socket_type = "REQ"
    OPTION_FIELDS: ClassVar[dict[str, str]] = {
        **DealerStrategy.OPTION_FIELDS,
        "req_correlate": "correlate",
        "req_relaxed": "relaxed",
    }
    #: req_correlate: replies matched to requests by a request id
    correlate: bool
    #: req_relaxed: a new request may go before the reply came
    relaxed: bool

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        #: the peer the pending request went to; None when no reply is awaited
        self.asked: PeerLike | None = None
        self.request_id = _IDS.getrandbits(32)

    def send(self, msg: Message) -> bool:
        if self.asked is not None and not self.relaxed:
            raise StateError("REQ must receive the reply before it sends another request")
        peer = self.target()
        if peer is None:
            return False
        if self.correlate:
            self.request_id = (self.request_id + 1) & 0xFFFFFFFF
            peer.out_pipe.put([_REQUEST_ID.pack(self.request_id), b"", *msg])
        else:
            peer.out_pipe.put([b"", *msg])
        self.asked = peer
        return True

    def recv(self) -> Message | None:
        if self.asked is None:
            raise StateError("REQ must send a request before it receives")
        inbound = self.inbound
        poll = inbound.poll
        while (item := poll()) is not None:
            if inbound.source is not self.asked or item.__class__ is not list:
                # a reply from a peer we did not ask: drop it
                self.discard(inbound.source, item)
                continue
            body = self.unwrap(item)
            if body is not None:
                self.asked = None
                return body
            self.discard(inbound.source, item)  # malformed, or stale
        return None

    def unwrap(self, msg: Message) -> Message | None:
        """The reply's body, or None for a malformed or stale reply."""
        if self.correlate:
            if len(msg) < 3 or msg[1] != b"" or msg[0] != _REQUEST_ID.pack(self.request_id):
                return None
            return msg[2:]
        if len(msg) < 2 or msg[0] != b"":
            return None
        return msg[1:]


class RepStrategy(SocketStrategy):
    """Fair-queued requests; the reply goes back along the request's envelope."""

    socket_type = "REP"
    can_send = True

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        #: (peer, envelope) of the request being answered; None when ready to receive
        self.pending: tuple[PeerLike, Message] | None = None

    def recv(self) -> Message | None:
        if self.pending is not None:
            raise StateError("REP must send the reply before it receives another request")
        inbound = self.inbound
        poll = inbound.poll
        while (item := poll()) is not None:
            if item.__class__ is not list:
                self.discard(inbound.source, item)
                continue
            msg: Message = item
            try:
                split = msg.index(b"") + 1
            except ValueError:
                # no delimiter: not a request, drop it as libzmq does
                self.discard(inbound.source, item)
                continue
            if split == len(msg):
                self.discard(inbound.source, item)
                continue
            self.pending = (inbound.source, msg[:split])
            return msg[split:]
        return None

    def send(self, msg: Message) -> bool:
        if self.pending is None:
            raise StateError("REP must receive a request before it sends a reply")
        peer, envelope = self.pending
        self.pending = None
        if not peer.gone and peer.attached:
            peer.out_pipe.offer([*envelope, *msg])  # dropped when the peer is full
        return True


class RouterStrategy(SocketStrategy):
    """Identity routing."""

    socket_type = "ROUTER"
    can_send = True
    OPTION_FIELDS: ClassVar[dict[str, str]] = {
        "router_mandatory": "mandatory",
        "router_handover": "handover",
        "probe_router": "probe",
        **SocketStrategy.OPTION_FIELDS,
        "disconnect_msg": "farewell",
    }
    #: router_mandatory: an unknown routing id raises; router_handover: a new peer
    #: takes a known id over; probe_router: an empty message to each new connection
    mandatory: bool
    handover: bool
    probe: bool
    #: disconnect_msg: received as [routing id, message] when a connected peer goes
    #: (libzmq's draft option)
    farewell: bytes | None

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        #: messages made here for the application (disconnect_msg), read first
        self.local: deque[Message] = deque()
        self.routes: dict[bytes, PeerLike] = {}
        self.next_id = _IDS.getrandbits(32)
        self.dropped = 0
        #: set by the runtime: close one peer's connection (handover)
        self.kick: Callable[[PeerLike], None] = lambda peer: None

    def generate_id(self) -> bytes:
        """A fresh id like libzmq's: a zero byte and a 32-bit counter."""
        while True:
            self.next_id = (self.next_id + 1) & 0xFFFFFFFF
            rid = b"\x00" + _REQUEST_ID.pack(self.next_id)
            if rid not in self.routes:
                return rid

    def connected(self, peer: PeerLike) -> None:
        rid = peer.identity or b""
        # ids that start with a zero byte are the generated ones (libzmq reserves
        # them): one announced by a peer is treated as none, so that it can never
        # take over the route of an anonymous peer
        if rid and rid[0] != 0:
            holder = self.routes.get(rid)
            if holder is not None and holder is not peer:
                if not self.handover:
                    peer.routing_id = None  # unrouted: libzmq's "anonymous" pipe
                    return
                holder.routing_id = None
                self.kick(holder)
        else:
            rid = self.generate_id()
        peer.routing_id = rid
        self.routes[rid] = peer
        if self.probe:
            peer.out_pipe.put([b""])
        super().connected(peer)

    def forget(self, peer: PeerLike) -> None:
        """Remove ``peer``'s route (and say so, with ``disconnect_msg``)."""
        rid = peer.routing_id
        if rid is not None and self.routes.get(rid) is peer:
            del self.routes[rid]
            if self.farewell is not None:
                was_empty = not self.local
                self.local.append([rid, self.farewell])
                if was_empty:
                    self.readable()

    def disconnected(self, peer: PeerLike) -> None:
        self.forget(peer)
        peer.routing_id = None

    def detach(self, peer: PeerLike) -> None:
        self.forget(peer)
        super().detach(peer)

    def send(self, msg: Message) -> bool:
        if len(msg) < 2:
            # libzmq needs the routing id and at least one frame; a lone id goes nowhere
            if self.mandatory:
                raise HostUnreachable("a ROUTER message needs a routing id frame and a body")
            self.no_route += 1
            return True
        peer = self.routes.get(msg[0])
        if peer is None:
            if self.mandatory:
                raise HostUnreachable(f"no peer with routing id {msg[0]!r}")
            self.dropped += 1
            self.no_route += 1
            return True
        if peer.out_pipe.full:
            if self.mandatory:
                return False
            self.dropped += 1
            peer.out_pipe.refused += 1  # a drop at the mark, this peer's
            return True
        peer.out_pipe.put(msg[1:])
        return True

    @classmethod
    def takes_bare_messages(cls) -> bool:
        """A one-frame message may wait as its ``bytes`` (not tracked by the cyclic
        garbage collector, which a crowd of idle peers makes dear): this class's own
        receive (:meth:`recv`, :meth:`recv_into`) makes it ``[routing id, frame]``."""
        return cls._receives_as(RouterStrategy)

    def recv(self) -> Message | None:
        if self.local:
            return self.local.popleft()
        inbound = self.inbound
        poll = inbound.poll
        while (item := poll()) is not None:
            rid = inbound.source.routing_id
            if rid is None:
                # an unrouted peer's (its id was taken, or it reconnected since)
                self.discard(inbound.source, item)
                continue
            if item.__class__ is bytes:
                return [rid, item]
            if item.__class__ is list:
                return [rid, *item]
        return None

    def recv_into(self, batch: list[Message], limit: int) -> None:
        """Messages taken in per-peer slices, each with its peer's routing id first."""
        while self.local and len(batch) < limit:
            batch.append(self.local.popleft())
        inbound = self.inbound
        poll_chunk = inbound.poll_chunk
        room = limit - len(batch)
        share = inbound.share(room)
        while room > 0:
            chunk = poll_chunk(share if share < room else room)
            if not chunk:
                return
            rid = inbound.source.routing_id
            if rid is not None:
                # a one-frame message waits as its bytes (takes_bare_messages); the
                # queued lists are the socket's own (the codec's, or an inproc
                # sender's copy): the id goes in front of each, and no new list is
                # made, which would feed the cyclic GC one more object per message
                for i, item in enumerate(chunk):
                    if item.__class__ is bytes:
                        chunk[i] = [rid, item]
                    else:
                        item.insert(0, rid)  # type: ignore[attr-defined]
                batch += chunk  # type: ignore[arg-type]
            else:
                for item in chunk:
                    self.discard(inbound.source, item)
            room = limit - len(batch)

    def statistics(self) -> dict[str, int]:
        return {"peers": len(self.inbound), "routes": len(self.routes), "dropped": self.dropped}


#: the rows of the socket-type table
REQ = SocketType(
    ReqStrategy,
    peers={"REP", "ROUTER"},
    sends_identity=True,
    own_options={"probe_router", "req_correlate", "req_relaxed"},
)
REP = SocketType(RepStrategy, peers={"REQ", "DEALER"}, drops_at_hwm=True)
DEALER = SocketType(
    DealerStrategy,
    peers={"REP", "DEALER", "ROUTER"},
    conflate_out=True,
    conflate_in=True,
    sends_identity=True,
    own_options={"probe_router", "hello_msg"},
)
ROUTER = SocketType(
    RouterStrategy,
    peers={"REQ", "DEALER", "ROUTER"},
    drops_at_hwm=True,
    sends_identity=True,
    own_options={
        "router_mandatory",
        "router_handover",
        "probe_router",
        "hello_msg",
        "disconnect_msg",
    },
)
