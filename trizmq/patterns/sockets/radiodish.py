"""RADIO and DISH (48/RADIO-DISH, ZMTP 3.1 JOIN/LEAVE, libzmq's udp transport).

Internal message form: a RADIO message is the two-frame list ``[group, body]``,
exactly as it travels over ZMTP (libzmq sends the group as a first frame with
MORE set and the body as the last frame). ``RadioStrategy.send`` takes that list
and ``DishStrategy.recv`` returns it; the runtime turns it into
``radio.send(body, group=...)`` and ``Message(frames=[body], group=group)``.

Rules:

* Groups are 0-255 bytes and matched exactly, byte for byte. Following the RFC 48
  grammar (``group-char = %d1-255``; libzmq keeps groups as C strings) a group
  given by the application may not contain a NUL byte: :func:`check_group` raises
  ``ValueError`` for that and for a group longer than 255 bytes. Groups read from
  the network are not checked: a DISH cannot have joined such a group anyway.
* RADIO (stream and inproc peers) sends a message only to peers that joined its
  group and drops it, never blocking, for a peer whose pipe is full. Per peer,
  joins are counted like libzmq's multimap: a LEAVE removes one JOIN. JOIN and
  LEAVE arrive as :class:`~trizmq.zmtp.events.Join`/``Leave`` objects in the
  peer's in_pipe and are handled at once (``eager``); data messages a DISH sends
  and other commands are discarded. A lost connection forgets the peer's groups:
  the DISH replays its joins when it reconnects.
* DISH ``join`` refuses a group it has already joined and ``leave`` a group it has
  not joined (``ValueError``; libzmq's EINVAL), so it never sends a duplicate JOIN.
  Each change goes at once as a JOIN/LEAVE command to every connected peer (never
  dropped), and the whole set is replayed on every (re)connection. DISH
  fair-queues its input and filters again by its joined groups; anything that is
  not a two-frame message is discarded.
* Datagram peers (``not peer.carries_commands``, the runtime's udp:// pseudo-peers):
  there is no ZMTP on udp, so a DISH sends them no commands and a RADIO sends them
  *every* message whatever its group, as libzmq does. Their input, decoded by
  :func:`trizmq.zmtp.datagram.decode_datagram`, arrives as the same ``[group, body]``.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar

from ...zmtp.events import Join, Leave
from .base import AnnouncingStrategy, Message, PeerLike, SocketStrategy, Wake
from .refusals import Refusals
from .socket_type import PUBLISHER_OPTION_FIELDS, SocketType

if TYPE_CHECKING:
    from ..._options import Options

log = logging.getLogger("trizmq")

__all__ = [
    "DISH",
    "MAX_GROUP_LENGTH",
    "RADIO",
    "DishStrategy",
    "RadioStrategy",
    "check_group",
    "is_datagram",
]

#: ZMQ_GROUP_MAX_LENGTH
MAX_GROUP_LENGTH = 255


def check_group(group: object) -> bytes:
    """``group`` as bytes (a str is UTF-8 encoded); ValueError if it is not a valid group."""
    if isinstance(group, str):
        group = group.encode("utf-8")
    elif isinstance(group, (bytes, bytearray, memoryview)):
        group = bytes(group)
    else:
        raise TypeError(f"a group must be bytes or str, not {type(group).__name__}")
    if len(group) > MAX_GROUP_LENGTH:
        raise ValueError(f"a group is at most {MAX_GROUP_LENGTH} bytes, got {len(group)}")
    if b"\x00" in group:
        raise ValueError("a group may not contain a NUL byte (RFC 48: group-char = %d1-255)")
    return group


def is_datagram(peer: PeerLike) -> bool:
    """A udp:// pseudo-peer: no ZMTP, so no JOIN/LEAVE and no group filtering by RADIO."""
    return not getattr(peer, "carries_commands", True)


class RadioStrategy(SocketStrategy):
    """Send ``[group, body]`` to the peers that joined ``group``; drop for a full one."""

    socket_type = "RADIO"
    can_send = True
    can_recv = False
    eager = True
    wants_commands = True

    OPTION_FIELDS: ClassVar[dict[str, str]] = dict(PUBLISHER_OPTION_FIELDS)
    #: the bounds of the groups kept: per peer, and for all peers together
    _max_per_peer: int
    _max_total: int

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        #: per attached stream/inproc peer: its joined groups with a JOIN count
        self.joined: dict[PeerLike, Counter[bytes]] = {}
        #: per group: the peers that joined it (an insertion-ordered set)
        self.members: dict[bytes, dict[PeerLike, None]] = {}
        #: attached datagram peers: they get every message
        self.broadcast: dict[PeerLike, None] = {}
        self.dropped = 0
        #: distinct (peer, group) joins held, and the bounds on them (as PUB's
        #: subscriptions: an excess JOIN is refused, counted, logged once per peer)
        self.joins = 0
        self.refusals = Refusals("joins")

    def attach(self, peer: PeerLike) -> bool:
        if is_datagram(peer):
            self.broadcast[peer] = None
        else:
            self.joined.setdefault(peer, Counter())
        super().attach(peer)
        if peer.in_pipe:
            self.incoming(peer)
        return True

    def detach(self, peer: PeerLike) -> None:
        self.inbound.remove(peer)
        self.broadcast.pop(peer, None)
        self.forget(peer)
        self.joined.pop(peer, None)
        self.refusals.forget(peer)

    def disconnected(self, peer: PeerLike) -> None:
        # the DISH replays its joins when it reconnects
        self.forget(peer)

    def forget(self, peer: PeerLike) -> None:
        """Drop every group ``peer`` joined (it stays attached)."""
        groups = self.joined.get(peer)
        if not groups:
            return
        members = self.members
        for group in groups:
            peers = members.get(group)
            if peers is not None:
                peers.pop(peer, None)
                if not peers:
                    del members[group]
        self.joins -= len(groups)
        groups.clear()

    def join(self, peer: PeerLike, group: bytes) -> None:
        """``peer`` sent JOIN ``group``."""
        groups = self.joined.get(peer)
        if groups is None:
            return
        if group not in groups and not self._admits(peer, len(groups)):
            return
        groups[group] += 1
        if groups[group] == 1:
            self.joins += 1
            self.members.setdefault(group, {})[peer] = None

    def _admits(self, peer: PeerLike, held: int) -> bool:
        """Whether ``peer``, holding ``held`` groups, may join one more."""
        if held < self._max_per_peer and self.joins < self._max_total:
            return True
        self.refusals.refuse(
            peer,
            "max_subscriptions %d per peer, max_subscriptions_total %d",
            self._max_per_peer,
            self._max_total,
        )
        return False

    def leave(self, peer: PeerLike, group: bytes) -> None:
        """``peer`` sent LEAVE ``group``: one JOIN fewer; unknown groups are ignored."""
        groups = self.joined.get(peer)
        if groups is None or group not in groups:
            return
        groups[group] -= 1
        if groups[group] <= 0:
            del groups[group]
            self.joins -= 1
            peers = self.members.get(group)
            if peers is not None:
                peers.pop(peer, None)
                if not peers:
                    del self.members[group]

    def incoming(self, peer: PeerLike) -> None:
        pipe = peer.in_pipe
        while pipe:
            item = pipe.popleft()
            if item.__class__ is Join:
                self.join(peer, item.group)
            elif item.__class__ is Leave:
                self.leave(peer, item.group)
            elif item.__class__ is list:
                self.discard(peer, item)  # data from a DISH: discarded (RFC 48)
            # any other command: discarded

    def send(self, msg: Message) -> bool:
        if len(msg) != 2:
            raise ValueError("a RADIO message is [group, body]")
        group = msg[0]
        delivered = False
        for targets in (self.members.get(group), self.broadcast):
            if not targets:
                continue
            delivered = True
            for peer in targets:
                if not peer.out_pipe.offer(msg):  # full: dropped (and counted there)
                    self.dropped += 1
        if not delivered:
            self.filtered += 1  # no peer joined the group: not a drop
        return True

    def recv(self) -> Message | None:
        raise NotImplementedError

    def subscriptions_of(self, peer: PeerLike) -> int:
        return len(self.groups_of(peer))

    def subscription_totals(self) -> tuple[int, int]:
        return self.joins, self.refusals.count

    def groups_of(self, peer: PeerLike) -> set[bytes]:
        """The groups ``peer`` has joined (for tests and diagnostics)."""
        return set(self.joined.get(peer, ()))

    def statistics(self) -> dict[str, int]:
        return {
            "peers": len(self.joined) + len(self.broadcast),
            "groups": len(self.members),
            "dropped": self.dropped,
            "joins": self.joins,
            "joins_refused": self.refusals.count,
        }


class DishStrategy(AnnouncingStrategy):
    """Fair-queued ``[group, body]`` messages filtered by the joined groups."""

    socket_type = "DISH"
    can_send = False

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        #: joined groups, in join order (the replay order)
        self.groups: dict[bytes, None] = {}

    def announced(self) -> Iterator[Join]:
        return (Join(group) for group in self.groups)

    def takes_commands(self, peer: PeerLike) -> bool:
        return not is_datagram(peer)

    def join(self, group: bytes | bytearray | memoryview | str) -> None:
        """Join ``group``; ValueError if it is invalid or already joined (libzmq: EINVAL)."""
        group = check_group(group)
        if group in self.groups:
            raise ValueError(f"group {group!r} is already joined")
        self.groups[group] = None
        self.upstream(Join(group))

    def leave(self, group: bytes | bytearray | memoryview | str) -> None:
        """Leave ``group``; ValueError if it was not joined (libzmq: EINVAL)."""
        group = check_group(group)
        if group not in self.groups:
            raise ValueError(f"group {group!r} is not joined")
        del self.groups[group]
        self.upstream(Leave(group))

    def send(self, msg: Message) -> bool:
        raise NotImplementedError

    def accept(self, peer: PeerLike, msg: Message) -> bool:
        return len(msg) == 2 and msg[0] in self.groups


#: the rows of the socket-type table
RADIO = SocketType(
    RadioStrategy, peers={"DISH"}, drops_at_hwm=True, publishes=True, udp="connect", addressed=True
)
DISH = SocketType(DishStrategy, peers={"RADIO"}, udp="bind", addressed=True)
