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
  both use: no code outside this package asks which transport an endpoint has.
  ``trizmq.transport`` registers the built-in transports; :func:`register_transport`
  is the public seam for another one (a test transport, a new scheme).
* A ``trio.run`` may put transports of its own in front of the table for its
  schemes (:data:`run_transports`): ``trizmq.testing``'s virtual network does, so
  that tcp and ipc go through memory on trio's clock.
* A transport never starts tasks of its own accord: whatever must run, it asks the
  :class:`LinkHost` (the socket's nursery) to run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

import attrs
import trio

from .._errors import EndpointError

if TYPE_CHECKING:
    from .._monitor import MonitorEvent
    from .._options import Options
    from ..nursery.peers import Peer
    from ..zmtp.connection import Received
    from ..zmtp.encoding import Buffer
    from ..zmtp.mechanism import Mechanism, ZapReply, ZapRequest

__all__ = [
    "Codec",
    "Endpoint",
    "LinkHost",
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


#: the listen backlog of a bound tcp/ipc endpoint unless the ``backlog`` option says
#: otherwise (libzmq's ZMQ_BACKLOG is 100): a thousand peers connecting at once must
#: not wait in SYN retries. The kernel caps it at ``net.core.somaxconn``.
DEFAULT_BACKLOG = 1024


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


@attrs.frozen(slots=True)
class Endpoint:
    """A validated endpoint; build it with :func:`parse_endpoint`."""

    transport: str
    address: str
    host: str | None = None
    port: int | None = None
    path: str | None = None
    #: udp multicast only: the interface (name, address or ``*``) before the ``;``
    interface: str | None = None

    def __str__(self) -> str:
        if self.host is not None and self.port is not None:
            host = f"[{self.host}]" if ":" in self.host else self.host
            iface = f"{self.interface};" if self.interface is not None else ""
            path = self.path or ""
            return f"{self.transport}://{iface}{host}:{self.port}{path}"
        return f"{self.transport}://{self.address}"


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

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.endpoint}>"


class Codec(Protocol):
    """The framing of one connection's bytes, sans I/O (``trizmq.zmtp.Connection``).

    The runtime feeds it what it reads and writes what it returns; it never
    awaits. The handshake produces bytes in an outbox (:meth:`data_to_send`) and may
    stop for an authentication answer (:attr:`pending_zap`, :meth:`zap_reply`).
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
    def mechanism(self) -> Mechanism: ...

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

    def encode_subscribe(self, topic: bytes) -> bytes: ...

    def encode_cancel(self, topic: bytes) -> bytes: ...

    def encode_join(self, group: bytes) -> bytes: ...

    def encode_leave(self, group: bytes) -> bytes: ...

    def encode_ping(self, ttl: float, context: bytes = b"") -> bytes: ...

    def encode_pong(self, context: bytes) -> bytes: ...

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
        self, socket_type: str, options: Options, endpoint: Endpoint, *, client: bool
    ) -> Codec:
        """A fresh codec for one connection of a socket of ``socket_type``: to
        ``endpoint`` (``client``, the connecting side) or accepted on the bound
        ``endpoint``."""
        ...

    def abort(self, stream: trio.abc.Stream) -> None:
        """The runtime is about to close ``stream`` to cut it (a flood's connection):
        make the close abrupt where the transport can (a TCP reset leaves no
        ``TIME_WAIT`` behind), or do nothing."""
        ...


class MessageBinding(Protocol):
    """What a message transport's bind or connect leaves behind: closable."""

    #: the endpoint, resolved
    endpoint: str

    @property
    def peer(self) -> Peer | None:
        """The peer it made, if it made one (a connect's)."""
        ...

    @property
    def ended(self) -> bool:
        """True when its peers left already (a refused link)."""
        ...

    def holds(self, peer: Peer) -> bool:
        """Whether ``peer`` came from this bind or connect."""
        ...

    async def aclose(self) -> None:
        """Undo the bind or connect: its peers leave."""
        ...


class LinkHost(Protocol):
    """The runtime of one socket, as a message transport sees it."""

    socket_type: str
    identity: bytes
    options: Options

    def new_link_peer(
        self,
        endpoint: str,
        *,
        out_hwm: int = 0,
        in_hwm: int = 0,
        across: Peer | None = None,
        datagram: bool = False,
        shared_queue: bool = False,
    ) -> Peer:
        """A NEW peer of this socket over new queues bounded by ``out_hwm``/``in_hwm``
        (0: unbounded), or over ``across``'s queues swapped (the other end of an
        inproc link). ``datagram``: no ZMTP under it (udp: no commands);
        ``shared_queue``: another socket reads its outgoing queue (inproc)."""
        ...

    def attach(self, peer: Peer) -> bool:
        """Route to and from ``peer`` (it waits for its link); False if refused."""
        ...

    def link_up(self, peer: Peer, peer_type: str, identity: bytes) -> None:
        """``peer``'s link is live: the other end is of ``peer_type`` and ``identity``."""
        ...

    def link_down(self, peer: Peer) -> None:
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

    async def bind(self, endpoint: Endpoint, host: LinkHost) -> MessageBinding:
        """Bind ``endpoint`` for ``host``; its peers come and go through ``host``."""
        ...

    async def connect(self, endpoint: Endpoint, host: LinkHost) -> MessageBinding:
        """Connect ``host`` to ``endpoint``."""
        ...


Transport = StreamTransport | MessageTransport

#: scheme -> transport: the one table (filled by ``trizmq.transport``)
_TRANSPORTS: dict[str, Transport] = {}

#: transports the current ``trio.run`` puts in front of the table, by scheme
run_transports: trio.lowlevel.RunVar[Mapping[str, Transport] | None] = trio.lowlevel.RunVar(
    "trizmq_run_transports", default=None
)

#: schemes libzmq knows and trizmq does not: a clearer message than "unknown"
_NOT_SUPPORTED = frozenset({"pgm", "epgm", "norm", "tipc", "vmci", "vsock"})


def zmtp_codec(socket_type: str, options: Options) -> Codec:
    """The ZMTP 3.x codec (greeting, mechanism, frames): what byte streams speak
    unless their transport names another."""
    from ..zmtp import Connection

    if socket_type == "STREAM":
        from ..zmtp.raw import RawConnection

        return RawConnection()
    security = options.security
    return Connection(
        socket_type,
        identity=options.routing_id or b"",
        maxmsgsize=options.maxmsgsize,
        max_frames=options.max_frames,
        max_subscription=subscription_bound(options),
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
    _TRANSPORTS[transport.scheme] = transport


def unregister_transport(scheme: str) -> None:
    """Take the transport of ``scheme`` out of the table (a no-op if there is none)."""
    _TRANSPORTS.pop(scheme, None)


def schemes() -> list[str]:
    """The registered schemes, in the order they were registered."""
    return list(_TRANSPORTS)


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
    try:
        return _TRANSPORTS[scheme]
    except KeyError:
        raise EndpointError(f"unknown transport {scheme!r}") from None


def parse_endpoint(text: object, *, for_bind: bool) -> Endpoint:
    """Parse *text* as an endpoint for ``bind`` (``for_bind=True``) or ``connect``.

    Raises :class:`EndpointError` (a ``ValueError``) naming the endpoint and the
    problem; host names are not resolved here.
    """
    if not isinstance(text, str):
        raise EndpointError(
            f"endpoint {text!r} is not a string (got {type(text).__name__}); "
            "expected text like 'tcp://127.0.0.1:5555'"
        )
    scheme, sep, address = text.partition("://")
    if not sep:
        raise EndpointError(
            f"endpoint {text!r} has no '://' separator; expected 'transport://address'"
        )
    if not scheme:
        raise EndpointError(f"endpoint {text!r} has no transport before '://'")
    transport = _TRANSPORTS.get(scheme)
    if transport is None:
        supported = ", ".join(schemes())
        if scheme.lower() in _NOT_SUPPORTED:
            raise EndpointError(
                f"endpoint {text!r}: transport {scheme!r} is not supported by trizmq "
                f"(supported: {supported})"
            )
        raise EndpointError(
            f"endpoint {text!r}: unknown transport {scheme!r} (supported: {supported})"
        )
    if not address:
        raise EndpointError(f"endpoint {text!r} has an empty address after '://'")
    if "\x00" in address:
        raise EndpointError(f"endpoint {text!r} contains a NUL character")
    return transport.parse(text, address, for_bind=for_bind)
