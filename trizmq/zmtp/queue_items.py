"""What a peer's two queues may hold: the closed set of kinds, each named once.

A socket's runtime gives every peer two queues (``trizmq.nursery.pipe.Pipe``): the
strategy puts into the outgoing one and a connection's writer (or a message
transport) takes from it; a connection's reader puts into the incoming one and the
strategy takes from it. Only the queue looks inside itself; everything else goes
through its methods. These are the things it holds, declared here, at the bottom of
the package, because the three layers that make and take them (the routing
strategies, the runtime's queues and the encoder, ``trizmq.zmtp.outbound``) all sit
above it.

Outgoing, in the order a connection sends them:

==================  ===========================================================
``list[bytes]``     a message: its frames
:class:`Fanout`     a message queued alike to several byte-stream peers; the
                    first connection to encode it keeps the bytes for the others
                    (in a published batch, :class:`FanoutRun`, only its first
                    and last message are wrapped so)
:class:`Unsent`     the rest of a message a connection began to write and the
                    kernel did not take: it belongs to that connection alone, and
                    goes before everything else
commands            :data:`OUTGOING_COMMANDS`: ``Subscribe``, ``Cancel``,
                    ``Join``, ``Leave``, ``Ping``, ``Pong`` (``zmtp.events``),
                    encoded by the codec in the peer's ZMTP version
:class:`Hangup`     the last item of a connection that ends after its messages
                    (a STREAM socket's ``[id, b""]``)
==================  ===========================================================

Incoming, in the order a connection parsed them:

==================  ===========================================================
``list[bytes]``     a message: its frames
``bytes``           a message of one frame, queued bare for the socket types
                    whose receive takes either form (a ``bytes`` is not tracked
                    by Python's cyclic garbage collector: see
                    ``Connection.bare_messages``)
commands            :data:`INCOMING_COMMANDS`: ``Subscribe``, ``Cancel``,
                    ``SubscriptionRefused``, ``Join``, ``Leave``, queued only for
                    the types that want them (a PING or PONG never enters a
                    queue: the connection answers it)
==================  ===========================================================

An inproc link shares its two queues between two sockets (one's outgoing is the
other's incoming): messages pass there as lists, commands as the same objects.

Rule: a class test (``item.__class__ is list``) is how a hot path tells the kinds
apart; the tuples below name the groups for the others.
"""

from __future__ import annotations

from itertools import accumulate
from typing import TypeAlias

from .events import Cancel, Join, Leave, Ping, Pong, Subscribe, SubscriptionRefused

__all__ = [
    "INCOMING_COMMANDS",
    "INCOMING_MESSAGES",
    "OUTGOING_COMMANDS",
    "OUTGOING_MESSAGES",
    "Fanout",
    "FanoutRun",
    "Hangup",
    "IncomingItem",
    "Message",
    "OutgoingItem",
    "Unsent",
    "payload",
]

#: a message's frames (a routing id or group first, where the socket type says so)
Message = list[bytes]


class Fanout:
    """One message queued to several tcp/ipc peers: their writers encode it once.

    The first writer to meet it stores the wire bytes in :attr:`wire`; the others
    reuse them (only connections whose encoding is shared: no encrypting
    mechanism). In a published batch (a :class:`FanoutRun`) only the first and the
    last message are wrapped, to mark where the run begins and ends in each queue.
    """

    __slots__ = ("frames", "index", "run", "size", "wire")

    def __init__(self, frames: list[bytes], run: FanoutRun | None = None, index: int = 0) -> None:
        self.frames = frames
        self.wire: bytes | None = None
        #: the payload bytes (frames' bodies), which each writer counts as it writes
        self.size = sum(map(len, frames))
        #: the batch this message was published in, if any, and its place there
        self.run = run
        self.index = index


class FanoutRun:
    """The messages of one published batch, queued alike to several peers: a
    connection whose queue holds exactly this run writes it as one buffer, encoded
    once for all of them (:attr:`wire`, with each message's end in :attr:`ends`).

    :attr:`items` is the batch as the publisher queues it: the first and the last
    message wrapped in a :class:`Fanout` that knows the run and its index in it
    (what a writer needs to see the run whole in a queue: its first message at the
    head and its last where the run must end), the messages between them as they
    are, shared by every queue. Wrapping each message cost the publisher ~0.2 µs
    a message. The publisher lets go of :attr:`items` once queued (:meth:`queued`):
    a run that kept pointing at its wrappers, as they point at it, would be a
    reference cycle, freed only by Python's cyclic collector (with 16 subscribers
    that collector took a third of a publisher's CPU).
    """

    __slots__ = ("_ends", "count", "header", "items", "msgs", "payload", "wire")

    def __init__(self, msgs: list[Message]) -> None:
        #: the messages, as the publisher gave them
        self.msgs = msgs
        items: list[object] = list(msgs)
        if items:
            last = len(msgs) - 1
            items[0] = Fanout(msgs[0], self, 0)
            if last:
                items[last] = Fanout(msgs[last], self, last)
        self.items = items
        self.wire: bytes | None = None
        #: how many of the messages :attr:`wire` holds (from the first)
        self.count = 0
        #: the payload bytes of those messages (their frames' bodies), for the counts
        self.payload = 0
        #: 0 while :attr:`ends` is listed as the wire is made; else every message
        #: in the wire is one frame behind a header of this many bytes, and the ends
        #: are worked out when first needed (a partial write), not for every run
        self.header = 0
        self._ends: list[int] | None = []

    @property
    def ends(self) -> list[int]:
        """Where each message of :attr:`wire` ends in it."""
        ends = self._ends
        if ends is None:
            header = self.header
            msgs = self.msgs[: self.count]
            ends = self._ends = list(accumulate([len(frames[0]) + header for frames in msgs]))
        return ends

    def encoded_alike(self, header: int, count: int) -> None:
        """The first ``count`` messages are in :attr:`wire`, each one frame behind a
        ``header``-byte header (see :attr:`header`)."""
        self.count = count
        self.header = header
        self._ends = None

    def payload_of(self, count: int) -> int:
        """The payload bytes of the first ``count`` messages of :attr:`wire` (a write
        that stopped within the run)."""
        if not count:
            return 0
        if self.header:
            return self.ends[count - 1] - count * self.header
        return sum([sum(map(len, frames)) for frames in self.msgs[:count]])

    def queued(self) -> None:
        """The batch is queued: the run lets go of it (see the class docstring)."""
        self.items = []


class Unsent(bytes):
    """The rest of a message whose first bytes a connection wrote: what it still owes
    the peer, written before anything else, and dropped (never resent on another
    connection) if that connection ends. Counted as it began, not again."""

    __slots__ = ()


class Hangup:
    """Queued after a connection's last message: its writer closes the connection
    once everything before it is written (a STREAM's ``[id, b""]``)."""

    __slots__ = ()


#: the commands an outgoing queue may hold, in the peer's ZMTP version on the wire
OUTGOING_COMMANDS = (Subscribe, Cancel, Join, Leave, Ping, Pong)
#: the commands an incoming queue may hold (for the types that want them)
INCOMING_COMMANDS = (Subscribe, Cancel, SubscriptionRefused, Join, Leave)
#: the classes of a message in an outgoing queue
OUTGOING_MESSAGES = (list, Fanout)
#: the classes of a message in an incoming queue: its frames, or a one-frame
#: message's bytes
INCOMING_MESSAGES = (list, bytes)

#: what an outgoing queue holds
OutgoingItem: TypeAlias = (
    "Message | Fanout | Unsent | Subscribe | Cancel | Join | Leave | Ping | Pong | Hangup"
)
#: what an incoming queue holds
IncomingItem: TypeAlias = (
    "Message | bytes | Subscribe | Cancel | SubscriptionRefused | Join | Leave"
)


def payload(item: object) -> int:
    """The payload bytes (frames' bodies) of a queued message, of either direction;
    0 for anything else (a command, the rest of a message begun)."""
    cls = item.__class__
    if cls is list:
        return sum(map(len, item))  # type: ignore[call-overload]
    if cls is bytes:
        return len(item)  # type: ignore[arg-type]
    if cls is Fanout:
        return item.size  # type: ignore[attr-defined, no-any-return]
    return 0
