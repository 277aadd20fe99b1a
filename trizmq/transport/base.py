"""What a transport is, and the one table from scheme to transport.

Two kinds of transport, one protocol each:

* a :class:`StreamTransport` (tcp, ipc; later ws, wss, tls) carries bytes: it parses
  its endpoints, listens and connects, handing the runtime plain
  :class:`trio.abc.Stream` objects, and names the :class:`Codec` that frames its bytes
  (ZMTP unless it says otherwise);
* a :class:`MessageTransport` (inproc, udp) carries whole messages with no byte
  stream: it binds and connects by giving the socket's runtime (a :class:`LinkHost`)
  peers whose queues it fills and drains itself.

Rules:

* One table, :func:`transport_for`, is what :func:`parse_endpoint` and the runtime
  both use: no code outside this package asks which transport an endpoint has. The
  table itself is :mod:`trizmq._endpoint`'s, below the options, so that the options
  parse endpoints without importing the transports that read them.
  ``trizmq.transport`` registers the built-in transports; :func:`register_transport`
  is the public seam for another one (a test transport, a new scheme).
* A ``trio.run`` may put transports of its own in front of the table for its
  schemes (:data:`run_transports`): ``trizmq.testing``'s virtual network does, so
  that tcp and ipc go through memory on trio's clock.
* A transport never starts tasks of its own accord: whatever must run, it asks the
  :class:`LinkHost` (the socket's nursery) to run.
* A message transport knows a peer only as a :class:`LinkPeer` (what it reads and
  sets of one, and the two queues it fills and drains, :class:`LinkQueue`), and the
  runtime only as a :class:`LinkHost`: the runtime's classes are not imported here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

import trio

from .._endpoint import Endpoint, add_scheme, parse_endpoint, parser_for, remove_scheme, schemes
from .._errors import EndpointError
from .._options import DEFAULT_BACKLOG
from ..zmtp.outbound import Framer

if TYPE_CHECKING:
    from .._monitor import MonitorEvent
    from .._options import Options
    from ..zmtp import Connection
    from ..zmtp.compression import PartCounts
    from ..zmtp.encoding import Buffer
    from ..zmtp.events import Received
    from ..zmtp.mechanism import ZapReply, ZapRequest

__all__ = [
    "Codec",
    "SocketKind",
    "Endpoint",
    "LinkHost",
    "LinkPeer",
    "LinkQueue",
    "DEFAULT_BACKLOG",
    "Listener",
    "ListenerBase",
    "effective_backlog",
    "MessageBinding",
    "MessageTransport",
    "StreamTransport",
    "Transport",
    "parse_endpoint",
    "register_transport",
    "run_transports",
    "schemes",
    "subscription_bound",
    "transport_for",
    "unregister_transport",
    "zmtp_codec",
]


def somaxconn() -> int | None:
    """The kernel's cap on a listen backlog (Linux ``net.core.somaxconn``), if known."""
    try:
        with open("/proc/sys/net/core/somaxconn") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def effective_backlog(backlog: int) -> int:
    """``backlog`` as the kernel will apply it: at most ``somaxconn``."""
    cap = somaxconn()
    return min(backlog, cap) if cap is not None and cap > 0 else backlog


class Listener(Protocol):
    """A bound endpoint that accepts incoming byte streams."""

    #: The endpoint actually bound, wildcards resolved (``tcp://127.0.0.1:40123``).
    endpoint: str

    async def accept(self) -> tuple[trio.abc.Stream, str]:
        """Wait for the next peer: its stream and address text (``""`` for ipc)."""
        ...

    async def aclose(self) -> None:
        """Stop listening and release the address; idempotent."""
        ...


_L = TypeVar("_L", bound="ListenerBase")


class ListenerBase:
    """What every listener shares: ``async with`` closes it; its repr names its endpoint.

    A transport's listener inherits this and defines ``endpoint``, :meth:`accept` and
    :meth:`aclose` (see :class:`Listener`).
    """

    endpoint: str

    async def aclose(self) -> None:
        """Stop listening and release the address; idempotent."""
        raise NotImplementedError

    async def __aenter__(self: _L) -> _L:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.endpoint}>"


class SocketKind(Protocol):
    """A socket's type, as a transport and its codec read it (its row of the table
    of socket types, ``trizmq.patterns.sockets.SocketType``)."""

    @property
    def name(self) -> str:
        """The ZMTP Socket-Type."""
        ...

    @property
    def peers(self) -> frozenset[str]:
        """The Socket-Types of the peers it accepts at the handshake."""
        ...

    @property
    def sends_identity(self) -> bool:
        """Its READY carries an Identity property."""
        ...

    @property
    def takes_subscriptions(self) -> bool:
        """Its peers subscribe to it (``max_subscription_bytes`` applies)."""
        ...

    @property
    def codec(self) -> str:
        """``"zmtp"``, or ``"raw"`` where its peers speak no ZMTP (STREAM)."""
        ...

    @property
    def udp(self) -> str:
        """``"bind"`` or ``"connect"`` for the type that may so use udp://; else ``""``."""
        ...

    def accepts(self, peer_type: str) -> bool:
        """Whether a peer of ``peer_type`` may talk to it."""
        ...


class Codec(Framer, Protocol):
    """The framing of one connection's bytes, sans I/O (``trizmq.zmtp.Connection``).

    The runtime feeds it what it reads and writes what it returns; it never
    awaits. The handshake produces bytes in an outbox (:meth:`data_to_send`) and may
    stop for an authentication answer (:attr:`pending_zap`, :meth:`zap_reply`).
    What the connection's sending half uses of it (its mechanism, its message
    encoder, the commands it encodes) is the ``Framer`` of
    ``trizmq.zmtp.outbound``, declared there once; the rest is the runtime's.
    """

    @property
    def handshake_complete(self) -> bool: ...

    @property
    def closed(self) -> bool: ...

    @property
    def in_message(self) -> bool: ...

    @property
    def pending_zap(self) -> ZapRequest | None: ...

    @property
    def peer_socket_type(self) -> str: ...

    @property
    def peer_identity(self) -> bytes: ...

    @property
    def peer_version(self) -> tuple[int, int]: ...

    @property
    def shares_encoding(self) -> bool:
        """True when this codec's wire form of a message is the same bytes for every
        connection that says so (unencrypted ZMTP): a publisher's message is then
        encoded once for them all, and a big frame is written from the sender's
        own buffer. False for a codec whose bytes are its own (encrypted, masked)."""
        ...

    @property
    def commands_parsed(self) -> int:
        """Commands parsed in traffic so far (unchanged by a call of
        :meth:`receive_data` that returned messages only)."""
        ...

    @property
    def received_bytes(self) -> int:
        """Payload bytes (frames' bodies) of the whole messages returned so far."""
        ...

    @property
    def part_counts(self) -> PartCounts | None:
        """What the message parts weighed as payload and on the wire, each way, for
        a codec that transforms them (a compressed transport's); None where every
        part goes on the wire as it is (the wire bytes are the payload bytes)."""
        ...

    #: when True, :meth:`receive_data` may return a message of one frame as its
    #: ``bytes`` rather than a one-item list (the runtime sets it for sockets whose
    #: receive takes either; a codec without the saving ignores it)
    bare_messages: bool

    @property
    def handshake_commands_received(self) -> int:
        """Handshake commands the peer has sent so far (how far it got)."""
        ...

    def start(self) -> bytes:
        """The first bytes to send (the greeting)."""
        ...

    def data_to_send(self) -> bytes:
        """What the protocol itself wants sent now (handshake commands)."""
        ...

    def refusal(self) -> bytes:
        """After ``receive_data`` raised ``ProtocolError`` in the handshake: the last
        words to send before closing (an HTTP 400 for a WebSocket; nothing for ZMTP)."""
        ...

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[Received]:
        """Consume bytes; every event and message they completed, in order."""
        ...

    def zap_reply(self, reply: ZapReply) -> list[Received]:
        """Resume the handshake with the authenticator's answer."""
        ...

    def message_encoder(self) -> Callable[[bytearray, Sequence[Buffer]], None]:
        """A function appending one message's wire form to a buffer."""
        ...

    def short_frame_overhead(self) -> int | None:
        """What each frame adds around its payload on the wire when the message's wire
        form is under 265 bytes (every frame then short); None where that is not a
        constant (or not known yet): the payload is then the frames' lengths summed."""
        ...

    def encode_error(self, reason: str) -> bytes: ...


@runtime_checkable
class StreamTransport(Protocol):
    """A transport of bytes: endpoints, listeners, outgoing streams and their codec."""

    #: the endpoint scheme, ``"tcp"``
    scheme: str

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """The endpoint ``text`` (whose part after ``://`` is ``address``);
        :class:`EndpointError` naming the problem."""
        ...

    async def listen(self, endpoint: Endpoint, options: Options) -> Listener:
        """Bind ``endpoint``; ``OSError`` naming it when the system refuses."""
        ...

    async def connect(self, endpoint: Endpoint, options: Options) -> trio.abc.Stream:
        """A stream to ``endpoint``; every failure to reach the peer is ``OSError``."""
        ...

    def codec(
        self, kind: SocketKind, options: Options, endpoint: Endpoint, *, client: bool
    ) -> Codec:
        """A fresh codec for one connection of a socket of type ``kind``: to
        ``endpoint`` (``client``, the connecting side) or accepted on the bound
        ``endpoint``."""
        ...

    def abort(self, stream: trio.abc.Stream) -> None:
        """The runtime is about to close ``stream`` to cut it (a flood's connection):
        make the close abrupt where the transport can (a TCP reset leaves no
        ``TIME_WAIT`` behind), or do nothing."""
        ...


class LinkQueue(Protocol):
    """One of a link peer's two queues, as a message transport fills or drains it
    (the runtime's :class:`~trizmq.nursery.pipe.Pipe`)."""

    @property
    def full(self) -> bool:
        """True at the high-water mark."""
        ...

    def __len__(self) -> int: ...

    def put(self, item: object) -> None:
        """Queue one message."""
        ...

    def put_counted(self, item: object, octets: int = 0) -> None:
        """Queue one message that enters, of ``octets`` payload bytes, counted."""
        ...

    def popleft(self) -> object:
        """Take the oldest message."""
        ...

    def take_counted(self) -> object:
        """Take the oldest message, counted as it leaves."""
        ...

    def note(self, name: str, count: int = 1) -> None:
        """Count an event of the queue (``"hwm"``: a message refused at the mark)."""
        ...

    async def wait_readable(self) -> None:
        """Wait until something is queued."""
        ...


class LinkPeer(Protocol):
    """A peer of a socket, as a message transport sees it (the runtime's
    :class:`~trizmq.nursery.peers.Peer`)."""

    #: True while a sender has taken messages it has not finished sending
    writing: bool
    #: what ends the link on both sides (an inproc link sets it)
    closer: Callable[[], None] | None

    @property
    def endpoint(self) -> str:
        """The local endpoint it came through."""
        ...

    @property
    def gone(self) -> bool:
        """True once it left the socket for good."""
        ...

    @property
    def in_pipe(self) -> LinkQueue: ...

    @property
    def out_pipe(self) -> LinkQueue: ...


#: the runtime's peer class, as one :class:`LinkHost` and its bindings name it
PeerT = TypeVar("PeerT", bound=LinkPeer)


class MessageBinding(Protocol[PeerT]):
    """What a message transport's bind or connect leaves behind: closable."""

    #: the endpoint, resolved
    endpoint: str

    @property
    def peer(self) -> PeerT | None:
        """The peer it made, if it made one (a connect's)."""
        ...

    @property
    def ended(self) -> bool:
        """True when its peers left already (a refused link)."""
        ...

    def holds(self, peer: PeerT) -> bool:
        """Whether ``peer`` came from this bind or connect."""
        ...

    async def aclose(self) -> None:
        """Undo the bind or connect: its peers leave."""
        ...


class LinkHost(Protocol[PeerT]):
    """The runtime of one socket, as a message transport sees it: the peers it makes
    are of its own class (``PeerT``), which the transport knows as a :class:`LinkPeer`."""

    socket_type: str
    identity: bytes
    options: Options

    @property
    def socket_kind(self) -> SocketKind:
        """Its type's row: the peer types it accepts, whether it may use udp://."""
        ...

    def new_link_peer(
        self,
        endpoint: str,
        *,
        out_hwm: int = 0,
        in_hwm: int = 0,
        across: PeerT | None = None,
        datagram: bool = False,
        shared_queue: bool = False,
    ) -> PeerT:
        """A NEW peer of this socket over new queues bounded by ``out_hwm``/``in_hwm``
        (0: unbounded), or over ``across``'s queues swapped (the other end of an
        inproc link). ``datagram``: no ZMTP under it (udp: no commands);
        ``shared_queue``: another socket reads its outgoing queue (inproc)."""
        ...

    def attach(self, peer: PeerT) -> bool:
        """Route to and from ``peer`` (it waits for its link); False if refused."""
        ...

    def link_up(self, peer: PeerT, peer_type: str, identity: bytes) -> None:
        """``peer``'s link is live: the other end is of ``peer_type`` and ``identity``."""
        ...

    def link_down(self, peer: PeerT) -> None:
        """``peer``'s link is gone for good."""
        ...

    async def run_task(
        self, task: Callable[[trio.TaskStatus[trio.CancelScope]], Awaitable[None]]
    ) -> trio.CancelScope:
        """Run ``task`` in the socket's nursery; its cancel scope once it started."""
        ...

    def emit(self, event: MonitorEvent) -> None:
        """Report a monitor event."""
        ...

    def flushed(self) -> None:
        """A queue may have drained (a closing socket looks again)."""
        ...

    def count(self, name: str, amount: int = 1) -> None:
        """Add to a counter shown in the socket's statistics."""
        ...


@runtime_checkable
class MessageTransport(Protocol):
    """A transport of whole messages, with no bytes and no codec (inproc, udp)."""

    scheme: str

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """As :meth:`StreamTransport.parse`."""
        ...

    async def bind(self, endpoint: Endpoint, host: LinkHost[PeerT]) -> MessageBinding[PeerT]:
        """Bind ``endpoint`` for ``host``; its peers come and go through ``host``."""
        ...

    async def connect(self, endpoint: Endpoint, host: LinkHost[PeerT]) -> MessageBinding[PeerT]:
        """Connect ``host`` to ``endpoint``."""
        ...


Transport = StreamTransport | MessageTransport

#: transports the current ``trio.run`` puts in front of the table, by scheme
run_transports: trio.lowlevel.RunVar[Mapping[str, Transport] | None] = trio.lowlevel.RunVar(
    "trizmq_run_transports", default=None
)


def zmtp_codec(kind: SocketKind, options: Options) -> Codec:
    """The ZMTP 3.x codec (greeting, mechanism, frames): what byte streams speak
    unless their transport names another, or the type speaks raw bytes (STREAM)."""
    if kind.codec == "raw":
        from ..zmtp.raw import RawConnection

        return RawConnection()
    return zmtp_connection(kind, options)


def zmtp_connection(
    kind: SocketKind,
    options: Options,
    *,
    maxmsgsize: int | None = None,
    max_subscription: int | None = None,
) -> Connection:
    """A ZMTP connection of the socket's type, mechanism, identity and limits: the
    tcp codec, and the inner connection of the codecs that wrap one (ws, compressed),
    which may bound a message or a subscription otherwise."""
    from ..zmtp import Connection

    security = options.security
    return Connection(
        kind.name,
        peers=kind.peers,
        sends_identity=kind.sends_identity,
        takes_subscriptions=kind.takes_subscriptions,
        identity=options.routing_id or b"",
        maxmsgsize=options.maxmsgsize if maxmsgsize is None else maxmsgsize,
        max_frames=options.max_frames,
        max_subscription=(
            subscription_bound(options) if max_subscription is None else max_subscription
        ),
        mechanism=security.mechanism() if security is not None else None,
    )


def subscription_bound(options: Options) -> int:
    """The longest topic a ZMTP codec lets a peer subscribe to before it refuses the
    subscription at its header (the ``max_subscription`` of
    :class:`~trizmq.zmtp.Connection`, which applies it on PUB and XPUB only):
    ``max_subscription_bytes``, which no single topic may exceed, or none for an
    XPUB whose application takes every subscription itself (``xpub_manual``)."""
    return -1 if options.xpub_manual else options.max_subscription_bytes


def register_transport(transport: Transport) -> None:
    """Add ``transport`` to the table under its scheme (replacing one of that scheme)."""
    if not isinstance(transport, (StreamTransport, MessageTransport)):
        raise TypeError(f"{transport!r} is neither a StreamTransport nor a MessageTransport")
    add_scheme(transport)


def unregister_transport(scheme: str) -> None:
    """Take the transport of ``scheme`` out of the table (a no-op if there is none)."""
    remove_scheme(scheme)


def transport_for(scheme: str) -> Transport:
    """The transport of ``scheme`` in the current context; ``EndpointError`` if none."""
    try:
        local = run_transports.get()
    except RuntimeError:  # outside trio.run
        local = None
    if local is not None:
        found = local.get(scheme)
        if found is not None:
            return found
    registered = parser_for(scheme)
    # only register_transport fills the table, with transports it checked
    if not isinstance(registered, (StreamTransport, MessageTransport)):
        raise EndpointError(f"unknown transport {scheme!r}")
    return registered
