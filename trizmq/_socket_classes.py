"""The socket classes: PAIR, pipeline, pub-sub, request-reply, radio-dish and the draft types."""

from __future__ import annotations

from collections.abc import Iterable

import trio

from ._docparts import shares_doc
from ._endpoint import parse_endpoint
from ._errors import EndpointError, StateError
from ._message import Message
from ._sending import frame_of
from ._socket import Socket
from .patterns.sockets import SubStrategy, XPubStrategy, XSubStrategy
from .patterns.sockets.draft import PeerStrategy, pack_routing_id, unpack_routing_id
from .patterns.sockets.radiodish import DishStrategy, check_group
from .zmtp.encoding import Buffer

__all__ = [
    "Channel",
    "Client",
    "Dealer",
    "Dish",
    "Gather",
    "Pair",
    "Peer",
    "Pub",
    "Pull",
    "Push",
    "Radio",
    "Rep",
    "Req",
    "Router",
    "Scatter",
    "Server",
    "Stream",
    "Sub",
    "XPub",
    "XSub",
]


def _topic(prefix: object) -> bytes:
    if isinstance(prefix, str):
        return prefix.encode()
    if isinstance(prefix, (bytes, bytearray, memoryview)):
        return bytes(prefix)
    raise TypeError(f"a topic must be bytes or str, not {type(prefix).__name__}")


class Pair(Socket):
    """PAIR: an exclusive connection to one peer (31/EXPAIR).

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``bind``, ``connect``, ``sndhwm``, ``rcvhwm``,
            ``linger``, ``heartbeat_ivl``, ...); an unknown name raises ``TypeError``,
            a bad value ``ValueError``.
    """

    socket_type = "PAIR"


class Push(Socket):
    """PUSH: round-robin messages to PULL peers; waits when none can take one.

    A PUSH cannot receive.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``sndhwm``, ``linger``, ``conflate``,
            ``immediate``, ...); an unknown name raises ``TypeError``, a bad value
            ``ValueError``.
    """

    socket_type = "PUSH"


class Pull(Socket):
    """PULL: fair-queue messages from PUSH peers.

    A PULL cannot send.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``rcvhwm``, ``conflate``, ``maxmsgsize``, ...);
            an unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "PULL"


class Pub(Socket):
    """PUB: send to every subscriber whose prefix matches; drop for a full one.

    A PUB never waits to send, and cannot receive.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``sndhwm``, ``conflate``, ``max_subscriptions``,
            ``max_subscription_bytes``, ``max_subscriptions_total``, ...); an unknown
            name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "PUB"


class XPub(Socket):
    """XPUB: PUB that receives subscriptions as ``b"\\x01topic"`` / ``b"\\x00topic"``.

    By default only the first subscription to a topic and the last unsubscription
    from it are received; ``xpub_verbose=True`` reports every subscription, and
    ``xpub_manual=True`` reports every one without applying it (see
    :meth:`subscribe`).

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``xpub_verbose``, ``xpub_manual``,
            ``xpub_welcome_msg``, ``max_subscriptions``, ``sndhwm``, ...); an unknown
            name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "XPUB"
    _strategy: XPubStrategy

    def subscribe(self, topic: bytes | str) -> None:
        """With ``xpub_manual=True``: subscribe the last peer that sent a subscription.

        Subscribes the peer whose subscription message was received last to
        ``topic`` (libzmq's ZMQ_SUBSCRIBE on a manual XPUB); the subscriptions it
        sends are only reported, never applied, in that mode. Does nothing before
        any subscription message has come, or once that peer has gone.

        Args:
            topic: the prefix to subscribe that peer to; a ``str`` is UTF-8 encoded.

        Raises:
            trizmq.StateError: without ``xpub_manual=True``.
            TypeError: for a topic that is neither bytes nor ``str``.
            trio.ClosedResourceError: once the socket is closed.
        """
        self._require_manual()
        self._strategy.apply_manual(_topic(topic), True)

    def unsubscribe(self, topic: bytes | str) -> None:
        """With ``xpub_manual=True``: remove that peer's subscription to ``topic``.

        "That peer" is the one whose subscription message was received last, as for
        :meth:`subscribe`.

        Args:
            topic: the prefix to unsubscribe that peer from; a ``str`` is UTF-8
                encoded.

        Raises:
            trizmq.StateError: without ``xpub_manual=True``.
            TypeError: for a topic that is neither bytes nor ``str``.
            trio.ClosedResourceError: once the socket is closed.
        """
        self._require_manual()
        self._strategy.apply_manual(_topic(topic), False)

    def _require_manual(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError("XPub is closed")
        if not self._strategy.manual:
            raise StateError("subscribe()/unsubscribe() on an XPub need xpub_manual=True")


class XSub(Socket):
    """XSUB: SUB whose subscriptions are messages ``b"\\x01topic"`` / ``b"\\x00topic"``.

    Sending ``b"\\x01topic"`` subscribes and ``b"\\x00topic"`` unsubscribes, as
    :meth:`subscribe` and :meth:`unsubscribe` do; any other message goes to every
    publisher that can take it.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``rcvhwm``, ``linger``, ``heartbeat_ivl``, ...);
            an unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "XSUB"
    _strategy: XSubStrategy

    def subscribe(self, prefix: bytes | str = b"") -> None:
        """Subscribe to messages starting with ``prefix`` (counted).

        Counted: a prefix subscribed twice needs two calls of :meth:`unsubscribe`.
        The subscription goes to every connected publisher at once.

        Args:
            prefix: the prefix a message must start with; ``b""`` (the default)
                matches every message. A ``str`` is UTF-8 encoded.

        Raises:
            TypeError: for a prefix that is neither bytes nor ``str``.
            trio.ClosedResourceError: once the socket is closed.
        """
        self._require_open()
        self._strategy.subscribe(_topic(prefix))

    def unsubscribe(self, prefix: bytes | str) -> None:
        """Remove one count of a subscription made with :meth:`subscribe`.

        The publishers are told when the last count goes; a prefix not subscribed is
        ignored.

        Args:
            prefix: the prefix given to :meth:`subscribe`; a ``str`` is UTF-8 encoded.

        Raises:
            TypeError: for a prefix that is neither bytes nor ``str``.
            trio.ClosedResourceError: once the socket is closed.
        """
        self._require_open()
        self._strategy.unsubscribe(_topic(prefix))

    def _require_open(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")


class Sub(XSub):
    """SUB: receive messages matching its subscriptions; cannot send.

    A SUB receives nothing until it subscribes: with ``subscribe=`` or with
    ``subscribe()`` (counted, as on :class:`trizmq.XSub`).

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``subscribe``, bytes or ``str`` or an iterable
            of them, subscribed at construction; ``rcvhwm``, ``conflate``, ...); an
            unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "SUB"
    _strategy: SubStrategy

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        for topic in self._options.subscribe:
            self._strategy.subscribe(topic)


class Req(Socket):
    """REQ: lock-step requests to REP or ROUTER peers, round-robin (28/REQREP).

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``req_correlate``, ``req_relaxed``,
            ``probe_router``, ``routing_id``, ``sndhwm``, ...); an unknown name raises
            ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "REQ"


class Rep(Socket):
    """REP: answer requests from REQ or DEALER peers, one at a time.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``rcvhwm``, ``linger``, ``heartbeat_ivl``, ...);
            an unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "REP"


class Dealer(Socket):
    """DEALER: asynchronous round-robin out and fair-queue in, no envelope change.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``routing_id``, ``probe_router``, ``hello_msg``,
            ``conflate``, ``sndhwm``, ...); an unknown name raises ``TypeError``, a
            bad value ``ValueError``.
    """

    socket_type = "DEALER"


class Router(Socket):
    """ROUTER: every message starts with the routing id of its peer.

    A message received starts with the routing id of the peer it came from; a
    message sent starts with the routing id of the peer it goes to.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``router_mandatory``, ``router_handover``,
            ``probe_router``, ``hello_msg``, ``disconnect_msg``, ``routing_id``, ...);
            an unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "ROUTER"


class Stream(Socket):
    """STREAM: raw TCP peers that speak no ZeroMQ (an HTTP client, a telnet session),
    each addressed by a routing id, as libzmq's ``ZMQ_STREAM``.

    ``await stream.recv_multipart()`` gives ``[routing_id, data]``: ``data`` is what
    one read brought, or ``b""`` when a connection opens and again when it ends.
    ``await stream.send_multipart([routing_id, data])`` writes ``data`` as it is;
    ``[routing_id, b""]`` closes that connection. tcp endpoints only; no security and
    no heartbeats (the peers speak no ZMTP).

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``bind`` and ``connect`` with ``tcp://``
            endpoints only, ``sndhwm``, ``rcvhwm``, ``linger``, ...); an unknown name
            raises ``TypeError``, a bad value ``ValueError``.

    Raises:
        trizmq.EndpointError: for a ``bind=`` or ``connect=`` endpoint that is not
            ``tcp://``.
    """

    socket_type = "STREAM"

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        for endpoint in (*self._options.bind, *self._options.connect):
            _tcp_only(str(endpoint))

    async def bind(self, endpoint: str) -> str:
        """Listen on a ``tcp://`` endpoint; return it with a 0 port resolved.

        Args:
            endpoint: a ``tcp://host:port`` endpoint; port 0 lets the system pick one.

        Returns:
            The endpoint bound, with its port resolved.

        Raises:
            trizmq.EndpointError: for an endpoint that is malformed or not ``tcp://``.
            trizmq.ZMQOSError: when the system refuses the bind (address in use).
            trio.ClosedResourceError: once the socket is closed.
            RuntimeError: before the socket is entered.
        """
        _tcp_only(endpoint)
        return await super().bind(endpoint)

    async def connect(self, endpoint: str) -> None:
        """Connect to a ``tcp://`` endpoint in the background; returns at once.

        Args:
            endpoint: a ``tcp://host:port`` endpoint, listening or not yet.

        Raises:
            trizmq.EndpointError: for an endpoint that is malformed or not ``tcp://``.
            trizmq.ZMQOSError: for an endpoint already connected (errno ``EISCONN``).
            trio.ClosedResourceError: once the socket is closed.
            RuntimeError: before the socket is entered.
        """
        _tcp_only(endpoint)
        await super().connect(endpoint)


def _tcp_only(endpoint: object) -> None:
    if isinstance(endpoint, str) and not endpoint.startswith("tcp://"):
        raise EndpointError(f"endpoint {endpoint!r}: a STREAM socket takes tcp:// endpoints only")


class _SinglePart(Socket):
    """The thread-safe draft family: single-frame messages, whole-message operations.

    Every send and receive moves one whole message, so any number of tasks may use
    one socket at once without interleaving, and other threads may use it through
    ``trio.from_thread``. A multipart send raises ``ValueError``.
    """

    def _one(self, frames: Iterable[Buffer]) -> bytes:
        msg = list(frames)
        if len(msg) != 1:
            raise ValueError(f"a {self.socket_type} message has exactly one frame, not {len(msg)}")
        return frame_of(msg[0])

    def _wrap(self, frame: bytes, **address: object) -> list[bytes]:
        """The strategy's form of an outgoing frame."""
        if address:
            raise TypeError(f"unexpected argument {next(iter(address))!r}")
        return [frame]

    async def send(self, data: Buffer, *, more: bool = False, **address: object) -> None:
        """Send one single-frame message (``more=True`` raises: no multipart here).

        Args:
            data: the frame, bytes-like.
            more: must be False.
            **address: where the type needs one (``group=`` on a Radio,
                ``routing_id=`` on a Server); nothing elsewhere.

        Raises:
            ValueError: for ``more=True``.
            TypeError: for a frame that is not bytes-like, or an unexpected keyword.
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot send (GATHER, DISH).
        """
        if more:
            raise ValueError(f"a {self.socket_type} socket sends single-frame messages only")
        await self._send_message(self._wrap(frame_of(data), **address))

    def send_nowait(self, data: Buffer, *, more: bool = False, **address: object) -> None:
        """Send one single-frame message or raise ``trio.WouldBlock``.

        Args:
            data: the frame, bytes-like.
            more: must be False.
            **address: where the type needs one (``group=`` on a Radio,
                ``routing_id=`` on a Server); nothing elsewhere.

        Raises:
            trio.WouldBlock: where :meth:`send` would wait.
            ValueError: for ``more=True``.
            TypeError: for a frame that is not bytes-like, or an unexpected keyword.
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot send (GATHER, DISH).
        """
        if more:
            raise ValueError(f"a {self.socket_type} socket sends single-frame messages only")
        self._send_message_nowait(self._wrap(frame_of(data), **address))

    def _prepare(self, frames: Iterable[Buffer]) -> list[bytes]:
        return self._wrap(self._one(frames))

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Send a one-frame list (anything longer raises ``ValueError``).

        Args:
            frames: exactly one bytes-like frame.

        Raises:
            ValueError: for a message of more or fewer than one frame.
            TypeError: for a frame that is not bytes-like.
        """
        await self._send_message(self._wrap(self._one(frames)))

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Send a one-frame list or raise ``trio.WouldBlock``.

        Args:
            frames: exactly one bytes-like frame.

        Raises:
            trio.WouldBlock: where :meth:`send_multipart` would wait.
            ValueError: for a message of more or fewer than one frame.
            TypeError: for a frame that is not bytes-like.
        """
        self._send_message_nowait(self._wrap(self._one(frames)))

    def _frames_of(self, raw: list[bytes]) -> list[bytes]:
        return raw[-1:]


@shares_doc
class Radio(_SinglePart):
    """RADIO: send to the dishes that joined a group (48/RADIO-DISH); never blocks.

    A message for a dish whose queue is full is dropped for it. Single-frame messages
    only, sent with ``send(data, group=...)``; a RADIO cannot receive.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``max_subscriptions`` and
            ``max_subscriptions_total`` bound the groups joined, ``sndhwm``,
            ``linger``, ...); an unknown name raises ``TypeError``, a bad value
            ``ValueError``.
    """

    socket_type = "RADIO"

    def _wrap(self, frame: bytes, **address: object) -> list[bytes]:
        if set(address) != {"group"}:
            raise TypeError("Radio.send needs group=... (and nothing else)")
        return [check_group(address["group"]), frame]

    async def send(  # type: ignore[override]
        self, data: Buffer, *, group: bytes | str, more: bool = False
    ) -> None:
        """Send ``data`` to the dishes that joined ``group`` (0-255 bytes).

        Args:
            {radio_send_args}

        Raises:
            {radio_send_errors}
        """
        await super().send(data, more=more, group=group)

    def send_nowait(  # type: ignore[override]
        self, data: Buffer, *, group: bytes | str, more: bool = False
    ) -> None:
        """As :meth:`send`; a RADIO never blocks, so this only fails on a bad argument.

        Args:
            {radio_send_args}

        Raises:
            {radio_send_errors}
        """
        super().send_nowait(data, more=more, group=group)

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Not for RADIO: a message needs a group; use ``send(data, group=...)``.

        Args:
            frames: ignored.

        Raises:
            TypeError: always.
        """
        raise TypeError("use Radio.send(data, group=...): a RADIO message needs a group")

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Not for RADIO: use ``send_nowait(data, group=...)``.

        Args:
            frames: ignored.

        Raises:
            TypeError: always.
        """
        raise TypeError("use Radio.send_nowait(data, group=...): a RADIO message needs a group")


class Dish(_SinglePart):
    """DISH: receive the messages of the groups it joined; ``recv_message().group``.

    :meth:`join` a group to receive it; ``recv_message()`` gives each message with
    its group, the other receives the data alone. A DISH cannot send.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``rcvhwm``, ``linger``, ``maxmsgsize``, ...); an
            unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "DISH"
    _strategy: DishStrategy

    def join(self, group: bytes | str) -> None:
        """Receive messages sent to ``group`` (0-255 bytes, exact match).

        Args:
            group: the group, 0-255 bytes without a NUL byte; a ``str`` is UTF-8
                encoded.

        Raises:
            ValueError: for an invalid group, or one already joined.
            TypeError: for a group that is neither bytes nor ``str``.
            trio.ClosedResourceError: once the socket is closed.
        """
        self._require_open()
        self._strategy.join(group)

    def leave(self, group: bytes | str) -> None:
        """Stop receiving ``group``.

        Args:
            group: a group given to :meth:`join`; a ``str`` is UTF-8 encoded.

        Raises:
            ValueError: for an invalid group, or one not joined.
            TypeError: for a group that is neither bytes nor ``str``.
            trio.ClosedResourceError: once the socket is closed.
        """
        self._require_open()
        self._strategy.leave(group)

    def _require_open(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")

    def _message_of(self, raw: list[bytes]) -> Message:
        return Message([raw[1]], group=raw[0])


class Client(_SinglePart):
    """CLIENT: round-robin requests to SERVER peers, fair-queued replies (41/CLIENTSERVER).

    Thread-safe, single-frame messages: any number of tasks (and threads, through
    ``trio.from_thread``) may use one socket at once; ``send(..., more=True)`` and a
    ``send_multipart`` of more than one frame raise ``ValueError``.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``sndhwm``, ``rcvhwm``, ``linger``,
            ``heartbeat_ivl``, ...); an unknown name raises ``TypeError``, a bad value
            ``ValueError``.
    """

    socket_type = "CLIENT"


class Server(_SinglePart):
    """SERVER: messages carry the routing id of the CLIENT they come from or go to.

    ``recv_message().routing_id`` tells where a message came from; ``send(data,
    routing_id=...)`` answers there. Thread-safe, single-frame messages, as
    :class:`trizmq.Client`.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``sndhwm``, ``rcvhwm``, ``linger``,
            ``heartbeat_ivl``, ...); an unknown name raises ``TypeError``, a bad value
            ``ValueError``.
    """

    socket_type = "SERVER"

    def _wrap(self, frame: bytes, **address: object) -> list[bytes]:
        if set(address) != {"routing_id"}:
            raise TypeError(f"{type(self).__name__}.send needs routing_id=... (and nothing else)")
        rid = address["routing_id"]
        if isinstance(rid, bool) or not isinstance(rid, int) or not 0 < rid < 2**32:
            raise ValueError(f"routing_id must be an int in 1..2**32-1, not {rid!r}")
        return [pack_routing_id(rid), frame]

    async def send(  # type: ignore[override]
        self, data: Buffer, *, routing_id: int, more: bool = False
    ) -> None:
        """Send ``data`` to the peer with ``routing_id`` (``HostUnreachable`` if unknown).

        Waits while that peer's queue is full.

        Args:
            data: the one frame of the message, bytes-like.
            routing_id: the peer's routing id, as ``recv_message().routing_id`` gives
                it: an ``int`` in 1..2**32-1.
            more: must be False (a message has one frame).

        Raises:
            trizmq.HostUnreachable: if no connected peer has ``routing_id``.
            ValueError: for a routing id out of range or not an ``int``, or
                ``more=True``.
            TypeError: for a frame that is not bytes-like.
            trio.ClosedResourceError: once the socket is closed.
        """
        await super().send(data, more=more, routing_id=routing_id)

    def send_nowait(  # type: ignore[override]
        self, data: Buffer, *, routing_id: int, more: bool = False
    ) -> None:
        """As :meth:`send`, or raise ``trio.WouldBlock`` if that peer's queue is full.

        Args:
            data: the one frame of the message, bytes-like.
            routing_id: the peer's routing id, as ``recv_message().routing_id`` gives
                it: an ``int`` in 1..2**32-1.
            more: must be False (a message has one frame).

        Raises:
            trio.WouldBlock: if that peer's queue is full.
            trizmq.HostUnreachable: if no connected peer has ``routing_id``.
            ValueError: for a routing id out of range or not an ``int``, or
                ``more=True``.
            TypeError: for a frame that is not bytes-like.
            trio.ClosedResourceError: once the socket is closed.
        """
        super().send_nowait(data, more=more, routing_id=routing_id)

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Not here: a message needs a routing id; use ``send(data, routing_id=...)``.

        Args:
            frames: ignored.

        Raises:
            TypeError: always.
        """
        raise TypeError(f"use {type(self).__name__}.send(data, routing_id=...)")

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Not here: use ``send_nowait(data, routing_id=...)``.

        Args:
            frames: ignored.

        Raises:
            TypeError: always.
        """
        raise TypeError(f"use {type(self).__name__}.send_nowait(data, routing_id=...)")

    def _message_of(self, raw: list[bytes]) -> Message:
        return Message([raw[1]], routing_id=unpack_routing_id(raw[0]))


class Peer(Server):
    """PEER: a SERVER that also connects; ``connect_peer`` returns the new peer's id.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``immediate`` must stay False for
            :meth:`connect_peer`; ``sndhwm``, ``rcvhwm``, ``linger``, ...); an unknown
            name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "PEER"
    _strategy: PeerStrategy

    async def connect_peer(self, endpoint: str) -> int:
        """Connect to ``endpoint`` and return the routing id that addresses it.

        Args:
            endpoint: the endpoint to connect to, as for ``connect()``.

        Returns:
            The routing id of the new peer, for ``send(data, routing_id=...)``.

        Raises:
            ValueError: with ``immediate=True`` (as in libzmq).
            trizmq.EndpointError: for a malformed or unsupported endpoint.
            trizmq.ZMQOSError: for an endpoint already connected (errno ``EISCONN``).
            RuntimeError: when the connection is refused at once, or before the socket
                is entered.
            trio.ClosedResourceError: once the socket is closed.
        """
        runtime = self._require_runtime()
        if self._options.immediate:
            raise ValueError("connect_peer needs immediate=False (as in libzmq)")
        peer = await runtime.connect(parse_endpoint(endpoint, for_bind=False))
        if peer is None:
            raise RuntimeError(f"{endpoint}: the connection was refused at once")
        return self._strategy.routing_id_of(peer)


class Scatter(_SinglePart):
    """SCATTER: round-robin single-frame messages to GATHER peers (49/SCATTER-GATHER).

    Thread-safe, as :class:`trizmq.Client`; a SCATTER cannot receive.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``sndhwm``, ``linger``, ``immediate``, ...); an
            unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "SCATTER"


class Gather(_SinglePart):
    """GATHER: fair-queue single-frame messages from SCATTER peers.

    Thread-safe, as :class:`trizmq.Client`; a GATHER cannot send.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``rcvhwm``, ``linger``, ``maxmsgsize``, ...); an
            unknown name raises ``TypeError``, a bad value ``ValueError``.
    """

    socket_type = "GATHER"


class Channel(_SinglePart):
    """CHANNEL: a thread-safe PAIR of single-frame messages (52/CHANNEL).

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``sndhwm``, ``rcvhwm``, ``linger``,
            ``heartbeat_ivl``, ...); an unknown name raises ``TypeError``, a bad value
            ``ValueError``.
    """

    socket_type = "CHANNEL"
