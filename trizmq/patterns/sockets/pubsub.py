"""PUB, SUB, XPUB and XSUB (29/PUBSUB, ZMTP 3.1 SUBSCRIBE/CANCEL).

Rules:

* Filtering happens on the publisher side for tcp, ipc and inproc: PUB/XPUB send a
  message only to peers with a subscription that prefixes its first frame, and drop
  it (never block) for a peer whose pipe is full. SUB/XSUB filter again on reading,
  so a publisher that does not filter still gives the right answer.
* Subscriber side: subscriptions are counted (n subscribes need n cancels). Like
  libzmq, every subscribe goes upstream and a cancel goes only when the count falls
  to zero. The whole set is replayed on every (re)connection.
* Publisher side: per peer a subscription is a set (libzmq's mtrie), so repeated
  subscribes from one peer are harmless; totals across peers decide what an XPUB
  reports: first subscribe and last cancel, or every subscribe with ``xpub_verbose``.
* Both wire forms are accepted from every peer: SUBSCRIBE/CANCEL commands and
  ``\\x01topic``/``\\x00topic`` messages. The codec picks the form that goes out
  from the peer's ZMTP version (3.1 commands, 3.0 messages).
* When a subscriber leaves, XPUB reports a synthetic cancel for each topic no
  other peer still holds.
* What a publisher keeps of its peers' subscriptions is bounded
  (``max_subscriptions`` and ``max_subscription_bytes`` per peer,
  ``max_subscriptions_total`` for all peers together):
  a subscription beyond a bound is refused, that is not kept (the peer gets no
  message for it), counted in ``statistics()["subscriptions_refused"]`` and
  logged once per peer. The peer keeps its connection: a limit is a matter of
  memory, not of protocol, and a subscriber that reconnects would only hit it
  again. A departed peer's subscriptions are forgotten and their memory given back.
* A topic longer than ``max_subscription_bytes`` could never fit: its connection
  refuses it at its header, keeping none of it, and reports it
  (:class:`~trizmq.zmtp.events.SubscriptionRefused`), which is counted and logged
  as any refusal. The whole topic is never read, so that a peer cannot make the
  publisher buffer a topic of any length only to refuse it. A cancel of such a
  topic is dropped there too and never reaches the strategy: it could end no
  subscription held, and a cancel of a topic not held changes nothing here.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ClassVar

from ...zmtp.events import Cancel, Subscribe, SubscriptionRefused
from ...zmtp.queue_items import Fanout, FanoutRun
from ..subscription_messages import parse_subscription_message
from ..subscriptions import Distribution, SubscriptionTrie
from .base import AnnouncingStrategy, Message, PeerLike, Queue, SocketStrategy, Wake
from .refusals import Refusals
from .socket_type import PUBLISHER_OPTION_FIELDS, SocketType

if TYPE_CHECKING:
    from ..._options import Options

__all__ = [
    "PUB",
    "SUB",
    "XPUB",
    "XSUB",
    "PubStrategy",
    "SubStrategy",
    "XPubStrategy",
    "XSubStrategy",
]

log = logging.getLogger("trizmq")

#: the longest topic frame the routing cache keeps, and how many it keeps at most
KEY_LIMIT = 256
ROUTES_LIMIT = 256
#: the most one-at-a-time publishes held back to go out as one run (see PubStrategy)
GATHER_LIMIT = 256


class PubStrategy(SocketStrategy):
    """Fan-out to matching subscribers; drop for a full one.

    Routing is cached between messages, and the cache is started afresh whenever
    the subscriptions' :attr:`~trizmq.patterns.Distribution.version` changes: when
    no match can depend on the data (only ``b""`` is subscribed, or every peer holds
    it) the peers are worked out once; otherwise a short topic frame heading a
    multipart message is looked up in a small table of the topics seen (a
    single-frame message, whose first frame is its payload too, is matched afresh
    each time).

    Messages sent one at a time to stream subscribers of everything (one or several)
    can be *gathered* instead of queued one by one: where the runtime sets
    :attr:`gather` (its fast path does), such a message is appended to
    :attr:`gathered` and ``gather()`` is called for the first one, so that the
    runtime routes them as one batch (:meth:`take_gathered`, then
    :meth:`send_batch`) before its event loop next waits. The batch is then encoded
    once for every subscriber, and each subscriber's queue takes it in one call, as
    with ``send_many``; one by one, each message cost every subscriber a queue call
    and its writer a look (with one subscriber too: a run is written with one call,
    and its receiver reads it in few). Whatever would change where the messages go,
    or needs them queued, queues them first (:meth:`flush`): a change of peers or
    subscriptions, a batch, the statistics, a close, and :data:`GATHER_LIMIT` of
    them waiting.
    """

    socket_type = "PUB"
    can_send = True
    can_recv = False
    eager = True
    wants_commands = True
    gathers = True
    OPTION_FIELDS: ClassVar[dict[str, str]] = {
        **PUBLISHER_OPTION_FIELDS,
        "max_subscription_bytes": "_max_bytes",
    }
    #: the bounds of what is kept of the peers' subscriptions (see the module docstring)
    _max_per_peer: int
    _max_total: int
    _max_bytes: int

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        self.subscribers: Distribution[PeerLike] = Distribution()
        self.dropped = 0
        #: subscriptions refused by the bounds, and the peers told so in the log
        self.refusals = Refusals("subscriptions")
        # the routing cache (see the class docstring), valid for ``_version``
        self._version = -1
        self._uniform = False
        #: the peers of every message while ``_uniform``
        self._peers: list[PeerLike] = []
        #: topic frame -> its peers, at most ROUTES_LIMIT of them
        self._routes: dict[bytes, list[PeerLike]] = {}
        #: True when every peer shares one encoding (no inproc copies to make)
        self._streams = True
        #: while ``_uniform`` with several peers, all of them sharing one encoding: their
        #: pipes' ``offer``, so that a message is queued without looking each one up
        self._offers: list[Callable[[object], bool]] | None = None
        #: the same peers' outgoing queues, for a batch (``offer_many_each``)
        self._fan_queues: list[Queue] | None = None
        #: messages held back to be routed as one batch (see the class docstring)
        self.gathered: list[Message] = []
        #: while messages are gathered, the send that gathers them (see _gathering)
        self._gathering_send: Callable[[Message], bool] | None = None

    def attach(self, peer: PeerLike) -> bool:
        self.subscribers.add_peer(peer)
        super().attach(peer)
        if peer.in_pipe:
            self.incoming(peer)
        return True

    def detach(self, peer: PeerLike) -> None:
        self.flush()  # to the peers they were sent to, this one included
        self.inbound.remove(peer)
        self.refusals.forget(peer)
        self.vanished(self.subscribers.remove_peer(peer))
        # hold no departed peer; the cache is rebuilt at the next send
        self._version = -1
        self.route = self.send
        self._peers = []
        self._offers = None
        self._fan_queues = None
        self._gathering_send = None
        self._routes = {}

    def disconnected(self, peer: PeerLike) -> None:
        # the subscriber resends its whole set when it reconnects
        self.vanished(self.subscribers.clear_peer(peer))

    def refresh(self) -> None:
        """The peers or subscriptions changed: start the routing cache afresh."""
        self.flush()  # to the peers they were sent to
        subscribers = self.subscribers
        self._version = subscribers.version
        self._uniform = uniform = subscribers.uniform()
        self._streams = all(peer.shares_wire for peer in subscribers)
        # with no prefix but b"", every message goes to the same peers
        self._peers = peers = subscribers.matching(b"") if uniform else []
        # one stream subscriber is worth gathering for too: its run is encoded once
        # and written with one call, as with several
        gathers = self._streams and bool(peers) and self.gather is not None
        shared = gathers or (self._streams and len(peers) > 1)
        self._offers = [peer.out_pipe.offer for peer in peers] if shared else None
        self._fan_queues = [peer.out_pipe for peer in peers] if shared else None
        self._routes = {}
        own = type(self).send is PubStrategy.send
        self._gathering_send = self._gathering() if gathers else None
        # the route the socket calls: the gathering, the one subscriber's queue, or
        # send itself (each does what send would, until the subscriptions change)
        if self._gathering_send is not None and own:
            self.route = self._gathering_send
        elif len(peers) == 1 and own:
            self.route = self._to_one(peers[0].out_pipe.offer)
        else:
            self.route = self.send

    def _to_one(self, offer: Callable[[object], bool]) -> Callable[[Message], bool]:
        """The route while every message goes to one subscriber (the commonest
        publisher): its pipe's ``offer``, a full pipe counted as a drop, until the
        subscriptions change (then :meth:`send` itself, which refreshes)."""
        subscribers = self.subscribers
        version = self._version

        def send(msg: Message) -> bool:
            if subscribers.version != version:
                return self.send(msg)
            if not offer(msg):
                self.dropped += 1
            return True

        return send

    def _gathering(self) -> Callable[[Message], bool]:
        """The route while every message goes to the same stream subscribers and the
        runtime gathers them (see the class docstring): the message appended to
        :attr:`gathered`, until the subscriptions change (then :meth:`send` itself,
        which refreshes). The runtime sets :attr:`gather` before the first send."""
        subscribers = self.subscribers
        version = self._version
        gather = self.gather
        assert gather is not None

        def send(msg: Message) -> bool:
            if subscribers.version != version:
                return self.send(msg)
            gathered = self.gathered
            gathered.append(msg)
            if len(gathered) == 1:
                gather()
            elif len(gathered) >= GATHER_LIMIT:
                self.flush()
            return True

        return send

    def send(self, msg: Message) -> bool:
        first = msg[0]
        subscribers = self.subscribers
        if subscribers.version != self._version:
            self.refresh()
        gathering = self._gathering_send
        if gathering is not None:
            return gathering(msg)  # the first message after a refresh
        if self._uniform:
            offers = self._offers
            if offers is not None:
                # the commonest fan-out: every message to the same stream peers
                shared = Fanout(msg)
                for offer in offers:
                    if not offer(shared):
                        self.dropped += 1
                return True
            peers = self._peers
        elif len(msg) > 1 and len(first) <= KEY_LIMIT and first.__class__ is bytes:
            routes = self._routes
            found = routes.get(first)
            if found is None:
                if len(routes) >= ROUTES_LIMIT:
                    routes.clear()
                found = routes[first] = subscribers.matching(first)
            peers = found
        else:
            peers = subscribers.matching(first)
        if len(peers) == 1:
            if not peers[0].out_pipe.offer(msg):
                self.dropped += 1
            return True
        if not peers:
            self.filtered += 1  # no subscription matches: not a drop
            return True
        # several subscribers: stream writers share one encoding, and each inproc
        # subscriber gets its own list (a receiver may mutate what it gets)
        shared = Fanout(msg)
        if self._streams:
            for peer in peers:
                if not peer.out_pipe.offer(shared):
                    self.dropped += 1
        else:
            for peer in peers:
                if not peer.out_pipe.offer(shared if peer.shares_wire else list(msg)):
                    self.dropped += 1
        return True

    def send_batch(self, msgs: list[Message], start: int) -> int:
        """Every message to the same stream peers (the commonest fan-out): the batch
        is marked as one run (its first and last message wrapped, see
        :class:`FanoutRun`) and appended to every peer's queue in one call
        (``offer_many_each``), so an extra subscriber costs one C-level extend per
        batch; the messages past a full peer's mark are dropped for that
        peer alone; with one such peer too where the runtime gathers (:attr:`gather`).
        Otherwise, with one subscriber of everything, the batch goes to its pipe with
        one call, the rest past its mark dropped, as :meth:`send` would one by one."""
        if self.gathered:
            self.flush()  # the messages sent before these go first
        if self.subscribers.version != self._version:
            self.refresh()
        queues = self._fan_queues
        if queues is None or not self._uniform:
            peers = self._peers
            if len(peers) != 1 or type(self).send is not PubStrategy.send:
                return super().send_batch(msgs, start)
            batch: list[object] = msgs[start:] if start else msgs  # type: ignore[assignment]
            self.dropped += len(batch) - peers[0].out_pipe.offer_many(batch)
            return len(msgs)
        self._queue_run(queues, msgs[start:] if start else msgs)
        return len(msgs)

    def _queue_run(self, queues: list[Queue], msgs: list[Message]) -> None:
        """Queue ``msgs`` as one run to each of ``queues`` (see :meth:`send_batch`)."""
        run = FanoutRun(msgs)
        self.dropped += queues[0].offer_many_each(queues, run.items)
        run.queued()

    def flush(self) -> None:
        """Queue the gathered messages, as one run, to the peers they were sent to."""
        gathered = self.gathered
        if gathered:
            self.gathered = []
            queues = self._fan_queues
            if queues is not None:  # always, while messages are gathered
                self._queue_run(queues, gathered)

    def take_gathered(self) -> list[Message]:
        """The gathered messages, handed over to be routed as a batch with
        :meth:`send_batch`; none when there are none, or when the peers or
        subscriptions changed since (they are queued to the peers they were sent to
        then, by :meth:`flush`)."""
        gathered = self.gathered
        if gathered:
            if self.subscribers.version != self._version:
                self.flush()
                return []
            self.gathered = []
        return gathered

    def recv(self) -> Message | None:
        raise NotImplementedError

    def incoming(self, peer: PeerLike) -> None:
        pipe = peer.in_pipe
        while pipe and not self.backlogged():
            item = pipe.popleft()
            if item.__class__ is Subscribe:
                self.subscribed(peer, item.topic, True)
            elif item.__class__ is Cancel:
                self.subscribed(peer, item.topic, False)
            elif item.__class__ is SubscriptionRefused:
                self.refused_at_header(peer, item.size)
            elif item.__class__ is list and item:
                parsed = parse_subscription_message(item[0]) if len(item) == 1 else None
                if parsed is None:
                    self.message(peer, item)
                else:
                    self.subscribed(peer, parsed[1], parsed[0])
                    self.discard(peer, item)  # a subscription, not a message for us

    def backlogged(self) -> bool:
        """True when incoming items must wait in their pipes (XPUB's app queue is full)."""
        return False

    def subscribed(self, peer: PeerLike, topic: bytes, on: bool) -> None:
        """Apply one subscription change from ``peer``."""
        if peer not in self.subscribers:
            return
        if on:
            if self.admits(peer, topic):
                self.subscribers.subscribe(peer, topic)
        else:
            self.subscribers.unsubscribe(peer, topic)

    def admits(self, peer: PeerLike, topic: bytes) -> bool:
        """Whether a subscription of ``peer`` to ``topic`` fits the bounds (see the module
        docstring); a refusal is counted and, the first time for a peer, logged."""
        why = self._refusal(peer, len(topic))
        if why is None:
            return True
        self.refusals.refuse(peer, "%s", why)
        return False

    def refused_at_header(self, peer: PeerLike, size: int) -> None:
        """A subscription of ``peer`` to a topic of ``size`` bytes, longer than
        ``max_subscription_bytes``, that its connection refused at its header: counted
        and logged as :meth:`admits` would refuse the topic."""
        if peer not in self.subscribers:
            return
        # the bound it was refused by is the one its connection was made with
        why = self._refusal(peer, size) or (
            f"its topic of {size} bytes exceeds max_subscription_bytes"
        )
        self.refusals.refuse(peer, "%s", why)

    def _refusal(self, peer: PeerLike, size: int) -> str | None:
        """Why a subscription of ``peer`` to a topic of ``size`` bytes is refused; None
        when it fits the bounds."""
        subscribers = self.subscribers
        held = subscribers.held_by(peer)
        if held < self._max_per_peer and subscribers.bytes_held_by(peer) + size <= self._max_bytes:
            if subscribers.total < self._max_total:
                return None
            return f"max_subscriptions_total ({self._max_total}) are held"
        if held >= self._max_per_peer:
            return f"it holds max_subscriptions ({self._max_per_peer}) already"
        return f"its topics would exceed max_subscription_bytes ({self._max_bytes})"


    def message(self, peer: PeerLike, msg: Message) -> None:
        """A non-subscription message from a subscriber: PUB ignores it."""
        self.discard(peer, msg)

    def vanished(self, topics: list[bytes]) -> None:
        """Topics no peer holds any more."""

    def statistics(self) -> dict[str, int]:
        self.flush()  # what is dropped is counted as it is queued
        return {
            "peers": len(self.subscribers),
            "dropped": self.dropped,
            "subscriptions": self.subscribers.total,
            "subscriptions_refused": self.refusals.count,
        }

    def subscriptions_of(self, peer: PeerLike) -> int:
        return self.subscribers.held_by(peer)

    def subscription_totals(self) -> tuple[int, int]:
        return self.subscribers.total, self.refusals.count


class XPubStrategy(PubStrategy):
    """PUB that hands subscriptions (and other peer messages) to the application."""

    socket_type = "XPUB"
    can_recv = True
    OPTION_FIELDS: ClassVar[dict[str, str]] = {
        **PubStrategy.OPTION_FIELDS,
        "xpub_verbose": "verbose",
        "rcvhwm": "hwm",
        "xpub_manual": "manual",
        "xpub_welcome_msg": "welcome",
    }
    #: xpub_verbose: every subscription is reported, not only a topic's first
    verbose: bool
    #: xpub_manual: subscriptions go to the application only, which applies them with
    #: :meth:`apply_manual` to the peer that sent the last one
    manual: bool
    #: xpub_welcome_msg: sent to every new subscriber as it connects
    welcome: bytes | None
    #: rcvhwm bounds the application queue: past it, items wait in their peers'
    #: pipes, whose readers then stop (back-pressure to the XSUB)
    hwm: int

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        self.last_subscriber: PeerLike | None = None
        self.pending: deque[Message] = deque()
        #: per item of :attr:`pending`, True for a peer's message, False for a
        #: subscription notification (the counts tell them apart, nothing else does)
        self._from_peer: deque[bool] = deque()
        #: the counts of :attr:`pending` (see trizmq.nursery.counting): a peer's message
        #: counts as received where it left its peer's pipe, so those still waiting
        #: here are taken off the socket's figure; a notification is the socket's
        #: own, counted as the application takes it
        self.peer_messages_waiting = self.peer_bytes_waiting = 0
        self.notices_taken = self.notice_bytes_taken = 0

    def backlogged(self) -> bool:
        return bool(self.hwm) and len(self.pending) >= self.hwm

    def connected(self, peer: PeerLike) -> None:
        if self.welcome is not None:
            peer.out_pipe.put([self.welcome])

    def apply_manual(self, topic: bytes, on: bool) -> None:
        """xpub_manual: subscribe (or not) the peer whose subscription message was the
        last one received to ``topic``, as libzmq's ZMQ_SUBSCRIBE on such an XPUB."""
        if self.last_subscriber is not None:
            PubStrategy.subscribed(self, self.last_subscriber, topic, on)  # as a PUB applies it

    def subscribed(self, peer: PeerLike, topic: bytes, on: bool) -> None:
        if peer not in self.subscribers:
            return
        if self.manual:
            self.last_subscriber = peer
            self.notify([(b"\x01" if on else b"\x00") + topic])
            return
        if on:
            if not self.admits(peer, topic):
                return
            first = self.subscribers.subscribe(peer, topic)
            if first or self.verbose:
                self.notify([b"\x01" + topic])
        elif self.subscribers.unsubscribe(peer, topic):
            self.notify([b"\x00" + topic])

    def message(self, peer: PeerLike, msg: Message) -> None:
        self.peer_messages_waiting += 1
        self.peer_bytes_waiting += sum(map(len, msg))
        self.notify(msg, from_peer=True)

    def vanished(self, topics: list[bytes]) -> None:
        for topic in topics:
            self.notify([b"\x00" + topic])

    def notify(self, msg: Message, from_peer: bool = False) -> None:
        """Queue a message for the application and wake a receiver: a peer's
        (``from_peer``) or a subscription notification of the socket's own."""
        was_empty = not self.pending
        self.pending.append(msg)
        self._from_peer.append(from_peer)
        if was_empty:
            self.readable()

    def own_counts(self) -> tuple[int, int, int]:
        # its application reads its own queue: peers' messages that wait there are
        # not received yet, and its subscription notifications are its own
        return (
            self.notices_taken - self.peer_messages_waiting,
            self.notice_bytes_taken - self.peer_bytes_waiting,
            len(self.pending),
        )

    def recv(self) -> Message | None:
        if not self.pending:
            return None
        msg = self.pending.popleft()
        size = sum(map(len, msg))
        if self._from_peer.popleft():
            self.peer_messages_waiting -= 1
            self.peer_bytes_waiting -= size
        else:
            self.notices_taken += 1
            self.notice_bytes_taken += size
        if self.hwm and len(self.pending) == self.hwm - 1:
            # room again: take up what waited in the pipes
            for peer in list(self.inbound):
                if peer.in_pipe:
                    self.incoming(peer)
        return msg


class XSubStrategy(AnnouncingStrategy):
    """Fair-queued input filtered by subscriptions; subscriptions sent as messages."""

    socket_type = "XSUB"
    can_send = True

    def __init__(self, options: Options, readable: Wake, writable: Wake) -> None:
        super().__init__(options, readable, writable)
        self.subscriptions = SubscriptionTrie()

    def announced(self) -> Iterator[Subscribe]:
        return (Subscribe(topic) for topic in self.subscriptions)

    def subscribe(self, topic: bytes) -> None:
        """Add one (counted) subscription and tell every connected peer."""
        self.subscriptions.add(topic)
        self.accepts_all = b"" in self.subscriptions
        self.shortcut_recv()
        self.upstream(Subscribe(topic))

    def unsubscribe(self, topic: bytes) -> None:
        """Remove one count; tell the peers when it was the last."""
        if self.subscriptions.remove(topic):
            self.accepts_all = b"" in self.subscriptions
            self.shortcut_recv()
            self.upstream(Cancel(topic))

    def send(self, msg: Message) -> bool:
        parsed = parse_subscription_message(msg[0]) if len(msg) == 1 else None
        if parsed is not None:
            if parsed[0]:
                self.subscribe(parsed[1])
            else:
                self.unsubscribe(parsed[1])
            return True
        # other messages go upstream to every peer that can take them (never block)
        for peer in self.peers:
            if peer.connected:
                peer.out_pipe.offer(msg)  # dropped for a full peer (counted there)
        return True

    def accept(self, peer: PeerLike, msg: Message) -> bool:
        # not called while ``b""`` is subscribed: ``accepts_all`` is True then
        return self.subscriptions.matches(msg[0])


class SubStrategy(XSubStrategy):
    """XSUB whose subscriptions come from ``subscribe()``; it cannot send messages."""

    socket_type = "SUB"
    can_send = False

    def send(self, msg: Message) -> bool:
        raise NotImplementedError


#: the rows of the socket-type table
PUB = SocketType(
    PubStrategy,
    peers={"SUB", "XSUB"},
    drops_at_hwm=True,
    conflate_out=True,
    publishes=True,
    takes_subscriptions=True,
)
XPUB = SocketType(
    XPubStrategy,
    peers={"SUB", "XSUB"},
    drops_at_hwm=True,
    publishes=True,
    takes_subscriptions=True,
    own_options={"xpub_verbose", "xpub_manual", "xpub_welcome_msg"},
)
SUB = SocketType(SubStrategy, peers={"PUB", "XPUB"}, conflate_in=True, own_options={"subscribe"})
XSUB = SocketType(XSubStrategy, peers={"PUB", "XPUB"}, drops_at_hwm=True)
