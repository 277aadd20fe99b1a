"""The contract between a socket's runtime and its routing strategy.

A strategy is one socket type's routing decisions, synchronous and free of I/O:
which peer gets an outgoing message, which peer's message is read next, what an
incoming subscription changes. The runtime (``trizmq.nursery``) owns tasks and
pipes and calls these methods; a strategy never awaits. Blocking is expressed by
return values: :meth:`SocketStrategy.send` returns False and :meth:`recv` returns
None where the caller would have to wait, and the runtime parks the caller until
a pipe's ``on_writable``/``on_readable`` callback (wired to the socket's wake-up
functions) says something changed.

Peers are seen through :class:`PeerLike` (the runtime's ``trizmq.nursery.peers.Peer``
satisfies it): two queues, what the peer announced, where it stands, and two
capabilities its transport gives it (:attr:`PeerLike.shares_wire`,
:attr:`PeerLike.carries_commands`), so that no strategy asks which transport a
peer came through.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar, Protocol

from ...zmtp.queue_items import INCOMING_MESSAGES, Message
from ..routing import FairQueue

if TYPE_CHECKING:
    from ..._options import Options

__all__ = [
    "Message",
    "PeerLike",
    "Queue",
    "SocketStrategy",
    "Wake",
    "can_take",
    "has_data",
]

#: a wake-up the runtime gives a strategy (the socket's receivers or senders)
Wake = Callable[[], None]


class Queue(Protocol):
    """What a strategy may do with one direction of a peer (the runtime's ``Pipe``)."""

    #: called when the queue goes from empty to non-empty (the fair queue's hook)
    on_input: Callable[[], None] | None
    #: messages refused at the mark so far (a drop where the pattern drops)
    refused: int
    #: messages counted through the queue (see ``trizmq.nursery.pipe``)
    passed: int

    @property
    def full(self) -> bool:
        """True when a producer must not add a message now."""
        ...

    def __bool__(self) -> bool: ...

    def __len__(self) -> int: ...

    def put(self, item: object) -> None:
        """Append, ignoring the high-water mark (commands; checked messages)."""
        ...

    def offer(self, item: object) -> bool:
        """Append unless full; False when full."""
        ...

    def offer_many(self, batch: list[object]) -> int:
        """Append as many of ``batch`` as the mark lets in; how many."""
        ...

    @staticmethod
    def offer_many_each(queues: Sequence[Queue], batch: list[object]) -> int:
        """:meth:`offer_many` of ``batch`` to each of ``queues`` in one call (a
        publisher's batch to its subscribers); how many were dropped in all."""
        ...

    def poll(self) -> object:
        """The oldest item, removed; None when empty."""
        ...

    def take(self, limit: int) -> list[object]:
        """The oldest ``limit`` items (all, if fewer), removed."""
        ...

    def poll_message(self) -> list[bytes] | None:
        """The oldest message, removed, dropping any command before it; None if none."""
        ...

    def poll_item(self) -> list[bytes] | bytes | None:
        """:meth:`poll_message`, a one-frame message queued bare coming as its bytes."""
        ...

    def popleft(self) -> object:
        """The oldest item, removed; IndexError when empty."""
        ...

    def drain(self) -> list[object]:
        """Every item, removed."""
        ...

    def extend(self, batch: Iterable[object]) -> None:
        """Append a batch."""
        ...

    def discarded(self, reason: str, item: object) -> None:
        """Count a message taken from this queue and not delivered, for ``reason``."""
        ...


class PeerLike(Protocol):
    """A peer as a strategy sees it."""

    #: the id a ROUTER routes this peer by (None: unrouted)
    routing_id: bytes | None

    @property
    def out_pipe(self) -> Queue:
        """Messages and commands to the peer."""
        ...

    @property
    def in_pipe(self) -> Queue:
        """Messages and commands from the peer."""
        ...

    @property
    def gone(self) -> bool:
        """True once the peer left for good (its input is still readable)."""
        ...

    @property
    def connected(self) -> bool:
        """True while a live connection (or link) carries the peer."""
        ...

    @property
    def attached(self) -> bool:
        """True while the strategy routes to and from the peer."""
        ...

    @property
    def identity(self) -> bytes:
        """The Identity the peer announced (b"" if none)."""
        ...

    @property
    def shares_wire(self) -> bool:
        """True when one encoding of a message serves this peer and every other such
        peer (byte-stream peers without encryption: a ``Fanout`` is written as
        is); False when the peer takes the message object itself (inproc)."""
        ...

    @property
    def carries_commands(self) -> bool:
        """False for a peer with no ZMTP under it (udp): it can neither subscribe nor
        join, so a RADIO sends it every message and a DISH sends it no JOIN."""
        ...


def can_take(peer: PeerLike) -> bool:
    """A peer whose outgoing pipe is under its high-water mark."""
    return not peer.out_pipe.full


def has_data(peer: PeerLike) -> bool:
    """A peer with a message waiting in its incoming pipe."""
    return bool(peer.in_pipe)


class SocketStrategy:
    """Base strategy: fair-queued input, no output; subclasses fill in the rest."""

    #: the ZMTP Socket-Type this strategy implements
    socket_type: ClassVar[str] = ""
    can_send: ClassVar[bool] = False
    can_recv: ClassVar[bool] = True
    #: True when incoming items must be handled as they arrive (subscriptions on PUB/XPUB),
    #: rather than when the application reads
    eager: ClassVar[bool] = False
    #: True when peer commands (SUBSCRIBE, CANCEL, JOIN, LEAVE) matter to this type
    wants_commands: ClassVar[bool] = False
    #: True when one-at-a-time sends may be gathered for the runtime to route as one
    #: batch (a publisher's: see PubStrategy); the runtime then sets :attr:`gather`
    gathers: ClassVar[bool] = False
    #: option -> the attribute where this strategy keeps its value: set from the
    #: options when the strategy is made, and refreshed by :meth:`reconfigure` when
    #: the option changes at run time (each stated here once, beside its type)
    OPTION_FIELDS: ClassVar[dict[str, str]] = {"hello_msg": "hello"}
    #: hello_msg (libzmq's draft ZMQ_HELLO_MSG; None where the type has none): the
    #: message every new connection gets first
    hello: bytes | None = None

    def __init__(
        self,
        options: Options,
        readable: Wake,
        writable: Wake,
    ) -> None:
        self.options = options
        for option, field in self.OPTION_FIELDS.items():
            setattr(self, field, getattr(options, option))
        #: messages sent to a routing id no peer has (ROUTER, SERVER, PEER, STREAM)
        self.no_route = 0
        #: messages sent to no peer by the pattern's rules (a PUB's message that no
        #: subscription matches); what is read and not delivered counts per peer
        #: (:meth:`discard`)
        self.filtered = 0
        #: wake the socket's receivers / senders
        self.readable = readable
        self.writable = writable
        #: set by the runtime where the strategy :attr:`gathers`: called when a message
        #: is gathered into an empty batch
        self.gather: Callable[[], None] | None = None
        self.inbound: FairQueue[PeerLike] = FairQueue()
        #: True when :meth:`accept` would accept every message, so recv can skip calling
        #: it: when it is not overridden, or (SUB) while the subscriptions say so
        self.accepts_all = type(self).accept is SocketStrategy.accept
        #: what the socket calls to take its next message, a one-frame one possibly as
        #: its ``bytes``: :meth:`recv_item`, a type's own :meth:`recv`, or a shortcut
        #: that does what they would (its one peer's pipe's ``poll_item``, see
        #: :meth:`shortcut_recv`); an attribute from the start, so that every instance
        #: keeps one attribute layout (Python's fast attribute access depends on it)
        self.take_item: Callable[[], Message | bytes | None] = self._own_take_item()
        #: what the socket calls to route a message out: :meth:`send`, or a shortcut
        #: a type offers that does what it would (see ``RoundRobinOut.shortcut_send``)
        self.route: Callable[[Message], bool] = self.send
        self.shortcut_recv()

    def _own_take_item(self) -> Callable[[], Message | bytes | None]:
        """The type's own receive in the single-frame form: :meth:`recv_item`, or
        :meth:`recv` for a type with a receive of its own (no bare messages then)."""
        return self.recv_item if type(self).recv is SocketStrategy.recv else self.recv

    @classmethod
    def takes_bare_messages(cls) -> bool:
        """True when nothing but this base class's receive (:meth:`recv`,
        :meth:`recv_into` and the one-peer shortcut) reads this type's incoming
        queues: a message of one frame may then be queued as its ``bytes`` (see
        ``trizmq.zmtp.Connection.bare_messages``), which they make a list again as
        they take it. False for a type whose own receive reads its queues."""
        return cls._receives_as(SocketStrategy)

    @classmethod
    def _receives_as(cls, reader: type[SocketStrategy]) -> bool:
        """Whether nothing but ``reader``'s receive (:meth:`recv`, :meth:`recv_into`)
        reads this type's incoming queues: not eager, no incoming hook of its own."""
        return (
            not cls.eager
            and cls.recv is reader.recv
            and cls.recv_into is reader.recv_into
            and cls.incoming is SocketStrategy.incoming
        )

    def reconfigure(self, options: Options) -> None:
        """The socket's options changed at run time (``Socket.set_options``)."""
        self.options = options
        for option, field in self.OPTION_FIELDS.items():
            setattr(self, field, getattr(options, option))

    def shortcut_recv(self) -> None:
        """With one peer that has not left, and every message accepted, :attr:`take_item`
        is that peer's pipe's ``poll_item``: what :meth:`recv_item` would do anyway, one
        call less per message (the commonest case); else the type's own receive.
        Called whenever the peers or :attr:`accepts_all` change."""
        only = self.inbound.only
        if (
            only is not None
            and not only.gone
            and self.accepts_all
            and type(self).recv is SocketStrategy.recv
        ):
            self.take_item = only.in_pipe.poll_item
        else:
            self.take_item = self._own_take_item()

    # -- peers -------------------------------------------------------------------
    def attach(self, peer: PeerLike) -> bool:
        """Start routing to and from ``peer``; False refuses it (PAIR's second peer)."""
        self.inbound.add(peer)
        self.shortcut_recv()
        return True

    def detach(self, peer: PeerLike) -> None:
        """Stop routing to ``peer``; its unread input stays readable until drained."""
        if not peer.in_pipe:
            self.inbound.remove(peer)
        self.shortcut_recv()

    def connected(self, peer: PeerLike) -> None:
        """A (re)established connection now carries ``peer`` (handshake done): it gets
        the ``hello_msg`` first, where there is one."""
        if self.hello is not None:
            peer.out_pipe.put([self.hello])

    def disconnected(self, peer: PeerLike) -> None:
        """The connection under a kept ``peer`` was lost; a reconnect may follow."""

    # -- messages ----------------------------------------------------------------
    def send(self, msg: Message) -> bool:
        """Queue ``msg``; False means no peer can take it now (the caller waits)."""
        raise NotImplementedError

    def flush(self) -> None:
        """Queue whatever the strategy holds back (a publisher's gathered messages,
        see :class:`~trizmq.patterns.sockets.pubsub.PubStrategy`); nothing here."""

    def take_gathered(self) -> list[Message]:
        """The messages gathered to be routed as a batch (:attr:`gathers`); none here."""
        return []

    def send_batch(self, msgs: list[Message], start: int) -> int:
        """Queue ``msgs[start:]`` in order, as calls of :meth:`send` would, up to the
        first that cannot be queued now; return its index (``len(msgs)`` when all
        were)."""
        send = self.send
        end = len(msgs)
        while start < end:
            if not send(msgs[start]):
                return start
            start += 1
        return end

    def recv(self) -> Message | None:
        """The next message, fair-queued over peers; None when there is none."""
        item = self.recv_item()
        return [item] if isinstance(item, bytes) else item

    def recv_item(self) -> Message | bytes | None:
        """:meth:`recv`, but a one-frame message queued as its ``bytes`` comes as they
        are: the single-frame receive's form, which takes the frame out anyway."""
        inbound = self.inbound
        poll = inbound.poll
        while (item := poll()) is not None:
            cls = item.__class__
            if cls is bytes:
                if self.accepts_all or self.accept(inbound.source, [item]):  # type: ignore[list-item]
                    return item  # type: ignore[return-value]
                self.discard(inbound.source, item)
            elif cls is list:
                if self.accepts_all or self.accept(inbound.source, item):  # type: ignore[arg-type]
                    return item  # type: ignore[return-value]
                self.discard(inbound.source, item)
        return None

    def recv_into(self, batch: list[Message], limit: int) -> None:
        """Append messages to ``batch`` while it is shorter than ``limit``, as calls
        of :meth:`recv` would, until none is waiting (a batch receive's rest).

        Plain fair-queued input that is all accepted is taken in slices shared among
        the ready peers (:meth:`FairQueue.poll_chunk`), each peer's messages in
        order; otherwise message by message.
        """
        if not self.accepts_all or type(self).recv is not SocketStrategy.recv:
            recv = self.recv
            while len(batch) < limit:
                msg = recv()
                if msg is None:
                    return
                batch.append(msg)
            return
        inbound = self.inbound
        poll_chunk = inbound.poll_chunk
        room = limit - len(batch)
        share = inbound.share(room)
        # only strategies that want peer commands find any in their peers' queues
        commands = self.wants_commands
        while room > 0:
            chunk = poll_chunk(share if share < room else room)
            if not chunk:
                return
            if commands:
                chunk = [item for item in chunk if item.__class__ in INCOMING_MESSAGES]
            # one-frame messages queued bare become lists again
            batch += [item if item.__class__ is list else [item] for item in chunk]  # type: ignore[list-item]
            room = limit - len(batch)

    def accept(self, peer: PeerLike, msg: Message) -> bool:
        """Whether a message read from ``peer`` is delivered (SUB filters here)."""
        return True

    def discard(self, peer: PeerLike, item: object) -> None:
        """A message read from ``peer`` that the pattern does not deliver: counted as
        filtered, on the peer's incoming queue."""
        peer.in_pipe.discarded("filtered", item)

    def incoming(self, peer: PeerLike) -> None:
        """Eager strategies consume ``peer.in_pipe`` here as soon as it fills."""

    def statistics(self) -> dict[str, int]:
        """Peers known to the strategy."""
        return {"peers": len(self.inbound)}

    # -- what the counts read (``sock.stats()``, ``trizmq.nursery.counting``) -------
    def shown_routing_id(self, peer: PeerLike) -> bytes | None:
        """The routing id ``peer`` is addressed by, as its figures show it."""
        return peer.routing_id

    def subscriptions_of(self, peer: PeerLike) -> int:
        """The subscriptions (or groups joined) the strategy keeps for ``peer``."""
        return 0

    def subscription_totals(self) -> tuple[int, int]:
        """The subscriptions (or joins) kept for every peer, and those refused."""
        return 0, 0

    def own_counts(self) -> tuple[int, int, int]:
        """What the socket's figures add for the strategy's own queue (an XPUB's):
        messages received, their payload bytes, and messages waiting in it."""
        return 0, 0, 0


class AnnouncingStrategy(SocketStrategy):
    """Input filtered by a set the socket keeps and announces to its peers as commands
    (XSUB's and SUB's subscriptions, DISH's groups).

    Rules: every command of the set (:meth:`announced`) goes to a peer as it connects,
    and each change to every connected peer (:meth:`upstream`), never dropped; a
    peer's queued commands are dropped when it disconnects, as the whole set is
    replayed when it comes back, and its queued messages kept. A peer that carries no
    commands (:meth:`takes_commands`: a udp:// pseudo-peer of DISH) gets none.
    """

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        #: every peer attached, connected or not, in attach order
        self.peers: list[PeerLike] = []

    def announced(self) -> Iterable[object]:
        """The commands that state the whole set, in the order it was built."""
        raise NotImplementedError

    def takes_commands(self, peer: PeerLike) -> bool:
        """Whether ``peer`` is told of the set (True unless a subclass says not)."""
        return True

    def attach(self, peer: PeerLike) -> bool:
        self.peers.append(peer)
        return super().attach(peer)

    def detach(self, peer: PeerLike) -> None:
        if peer in self.peers:
            self.peers.remove(peer)
        super().detach(peer)

    def connected(self, peer: PeerLike) -> None:
        if self.takes_commands(peer):
            for command in self.announced():
                peer.out_pipe.put(command)

    def disconnected(self, peer: PeerLike) -> None:
        pipe = peer.out_pipe
        kept = [item for item in pipe.drain() if item.__class__ is list]
        if kept:
            pipe.extend(kept)

    def upstream(self, command: object) -> None:
        """Send one change of the set to every connected peer that takes commands."""
        for peer in self.peers:
            if peer.connected and self.takes_commands(peer):
                peer.out_pipe.put(command)
