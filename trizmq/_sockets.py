"""The socket classes: PAIR, pipeline, pub-sub, request-reply, radio-dish and the draft types."""

from __future__ import annotations

from collections.abc import Iterable

import trio

from ._endpoint import parse_endpoint
from ._errors import EndpointError, StateError
from ._message import Message
from ._socket import Socket, _frame
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
    """PAIR: an exclusive connection to one peer (31/EXPAIR)."""

    socket_type = "PAIR"


class Push(Socket):
    """PUSH: round-robin messages to PULL peers; waits when none can take one."""

    socket_type = "PUSH"


class Pull(Socket):
    """PULL: fair-queue messages from PUSH peers."""

    socket_type = "PULL"


class Pub(Socket):
    """PUB: send to every subscriber whose prefix matches; drop for a full one."""

    socket_type = "PUB"


class XPub(Socket):
    """XPUB: PUB that receives subscriptions as ``b"\\x01topic"`` / ``b"\\x00topic"``."""

    socket_type = "XPUB"
    _strategy: XPubStrategy

    def subscribe(self, topic: bytes | str) -> None:
        """With ``xpub_manual=True``: subscribe the peer whose subscription message was
        received last to ``topic`` (libzmq's ZMQ_SUBSCRIBE on a manual XPUB); the
        subscriptions it sends are only reported, never applied, in that mode."""
        self._require_manual()
        self._strategy.apply_manual(_topic(topic), True)

    def unsubscribe(self, topic: bytes | str) -> None:
        """With ``xpub_manual=True``: remove that peer's subscription to ``topic``."""
        self._require_manual()
        self._strategy.apply_manual(_topic(topic), False)

    def _require_manual(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError("XPub is closed")
        if not self._strategy.manual:
            raise StateError("subscribe()/unsubscribe() on an XPub need xpub_manual=True")


class XSub(Socket):
    """XSUB: SUB whose subscriptions are messages ``b"\\x01topic"`` / ``b"\\x00topic"``."""

    socket_type = "XSUB"
    _strategy: XSubStrategy

    def subscribe(self, prefix: bytes | str = b"") -> None:
        """Subscribe to messages starting with ``prefix`` (counted)."""
        self._require_open()
        self._strategy.subscribe(_topic(prefix))

    def unsubscribe(self, prefix: bytes | str) -> None:
        """Remove one count of a subscription made with :meth:`subscribe`."""
        self._require_open()
        self._strategy.unsubscribe(_topic(prefix))

    def _require_open(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")


class Sub(XSub):
    """SUB: receive messages matching its subscriptions; cannot send."""

    socket_type = "SUB"
    _strategy: SubStrategy

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        for topic in self._options.subscribe:
            self._strategy.subscribe(topic)


class Req(Socket):
    """REQ: lock-step requests to REP or ROUTER peers, round-robin (28/REQREP)."""

    socket_type = "REQ"


class Rep(Socket):
    """REP: answer requests from REQ or DEALER peers, one at a time."""

    socket_type = "REP"


class Dealer(Socket):
    """DEALER: asynchronous round-robin out and fair-queue in, no envelope change."""

    socket_type = "DEALER"


class Router(Socket):
    """ROUTER: every message starts with the routing id of its peer."""

    socket_type = "ROUTER"


class Stream(Socket):
    """STREAM: raw TCP peers that speak no ZeroMQ (an HTTP client, a telnet session),
    each addressed by a routing id, as libzmq's ``ZMQ_STREAM``.

    ``await stream.recv_multipart()`` gives ``[routing_id, data]``: ``data`` is what
    one read brought, or ``b""`` when a connection opens and again when it ends.
    ``await stream.send_multipart([routing_id, data])`` writes ``data`` as it is;
    ``[routing_id, b""]`` closes that connection. tcp endpoints only; no security and
    no heartbeats (the peers speak no ZMTP).
    """

    socket_type = "STREAM"

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        for endpoint in (*self._options.bind, *self._options.connect):
            _tcp_only(str(endpoint))

    async def bind(self, endpoint: str) -> str:
        """Listen on a ``tcp://`` endpoint; return it with a 0 port resolved."""
        _tcp_only(endpoint)
        return await super().bind(endpoint)

    async def connect(self, endpoint: str) -> None:
        """Connect to a ``tcp://`` endpoint in the background; returns at once."""
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
        return _frame(msg[0])

    def _wrap(self, frame: bytes, **address: object) -> list[bytes]:
        """The strategy's form of an outgoing frame."""
        if address:
            raise TypeError(f"unexpected argument {next(iter(address))!r}")
        return [frame]

    async def send(self, data: Buffer, *, more: bool = False, **address: object) -> None:
        """Send one single-frame message (``more=True`` raises: no multipart here)."""
        if more:
            raise ValueError(f"a {self.socket_type} socket sends single-frame messages only")
        await self._send_raw(self._wrap(_frame(data), **address))

    def send_nowait(self, data: Buffer, *, more: bool = False, **address: object) -> None:
        """Send one single-frame message or raise ``trio.WouldBlock``."""
        if more:
            raise ValueError(f"a {self.socket_type} socket sends single-frame messages only")
        self._send_raw_nowait(self._wrap(_frame(data), **address))

    def _prepare(self, frames: Iterable[Buffer]) -> list[bytes]:
        return self._wrap(self._one(frames))

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Send a one-frame list (anything longer raises ``ValueError``)."""
        await self._send_raw(self._wrap(self._one(frames)))

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Send a one-frame list or raise ``trio.WouldBlock``."""
        self._send_raw_nowait(self._wrap(self._one(frames)))

    def _frames_of(self, raw: list[bytes]) -> list[bytes]:
        return raw[-1:]


class Radio(_SinglePart):
    """RADIO: send to the dishes that joined a group (48/RADIO-DISH); never blocks."""

    socket_type = "RADIO"

    def _wrap(self, frame: bytes, **address: object) -> list[bytes]:
        if set(address) != {"group"}:
            raise TypeError("Radio.send needs group=... (and nothing else)")
        return [check_group(address["group"]), frame]

    async def send(  # type: ignore[override]
        self, data: Buffer, *, group: bytes | str, more: bool = False
    ) -> None:
        """Send ``data`` to the dishes that joined ``group`` (0-255 bytes)."""
        await super().send(data, more=more, group=group)

    def send_nowait(  # type: ignore[override]
        self, data: Buffer, *, group: bytes | str, more: bool = False
    ) -> None:
        """As :meth:`send`; a RADIO never blocks, so this only fails on a bad argument."""
        super().send_nowait(data, more=more, group=group)

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Not for RADIO: a message needs a group; use ``send(data, group=...)``."""
        raise TypeError("use Radio.send(data, group=...): a RADIO message needs a group")

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Not for RADIO: use ``send_nowait(data, group=...)``."""
        raise TypeError("use Radio.send_nowait(data, group=...): a RADIO message needs a group")


class Dish(_SinglePart):
    """DISH: receive the messages of the groups it joined; ``recv_message().group``."""

    socket_type = "DISH"
    _strategy: DishStrategy

    def join(self, group: bytes | str) -> None:
        """Receive messages sent to ``group`` (0-255 bytes, exact match)."""
        self._require_open()
        self._strategy.join(group)

    def leave(self, group: bytes | str) -> None:
        """Stop receiving ``group``."""
        self._require_open()
        self._strategy.leave(group)

    def _require_open(self) -> None:
        if self._closing:
            raise trio.ClosedResourceError(f"{type(self).__name__} is closed")

    def _message_of(self, raw: list[bytes]) -> Message:
        return Message([raw[1]], group=raw[0])


class Client(_SinglePart):
    """CLIENT: round-robin requests to SERVER peers, fair-queued replies (41/CLIENTSERVER)."""

    socket_type = "CLIENT"


class Server(_SinglePart):
    """SERVER: messages carry the routing id of the CLIENT they come from or go to."""

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
        """Send ``data`` to the peer with ``routing_id`` (``HostUnreachable`` if unknown)."""
        await super().send(data, more=more, routing_id=routing_id)

    def send_nowait(  # type: ignore[override]
        self, data: Buffer, *, routing_id: int, more: bool = False
    ) -> None:
        """As :meth:`send`, or raise ``trio.WouldBlock`` if that peer's queue is full."""
        super().send_nowait(data, more=more, routing_id=routing_id)

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Not here: a message needs a routing id; use ``send(data, routing_id=...)``."""
        raise TypeError(f"use {type(self).__name__}.send(data, routing_id=...)")

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Not here: use ``send_nowait(data, routing_id=...)``."""
        raise TypeError(f"use {type(self).__name__}.send_nowait(data, routing_id=...)")

    def _message_of(self, raw: list[bytes]) -> Message:
        return Message([raw[1]], routing_id=unpack_routing_id(raw[0]))


class Peer(Server):
    """PEER: a SERVER that also connects; ``connect_peer`` returns the new peer's id."""

    socket_type = "PEER"
    _strategy: PeerStrategy

    async def connect_peer(self, endpoint: str) -> int:
        """Connect to ``endpoint`` and return the routing id that addresses it."""
        runtime = self._require_runtime()
        if self._options.immediate:
            raise ValueError("connect_peer needs immediate=False (as in libzmq)")
        peer = await runtime.connect(parse_endpoint(endpoint, for_bind=False))
        if peer is None:
            raise RuntimeError(f"{endpoint}: the connection was refused at once")
        return self._strategy.routing_id_of(peer)


class Scatter(_SinglePart):
    """SCATTER: round-robin single-frame messages to GATHER peers (49/SCATTER-GATHER)."""

    socket_type = "SCATTER"


class Gather(_SinglePart):
    """GATHER: fair-queue single-frame messages from SCATTER peers."""

    socket_type = "GATHER"


class Channel(_SinglePart):
    """CHANNEL: a thread-safe PAIR of single-frame messages (52/CHANNEL)."""

    socket_type = "CHANNEL"
