"""The tcp:// transport: bind a listening TCP socket or connect one, as trio byte streams."""

from __future__ import annotations

import contextlib
import errno
import math
import struct
from typing import TYPE_CHECKING

import trio

from .._errors import EndpointError, os_error
from .addresses import parse_host_port
from .base import DEFAULT_BACKLOG, Endpoint, Listener, effective_backlog
from .os_sockets import SocketListenerBase, ZmtpStreamTransport, closed_on_error, rename_oserror

if TYPE_CHECKING:
    from .._options import Options

__all__ = [
    "DEFAULT_BACKLOG",
    "TCP",
    "TCPListener",
    "TcpTransport",
    "abort_on_close",
    "apply_tcp_options",
    "connect_tcp",
    "format_sockaddr",
    "listen_tcp",
    "rename_oserror",
]


def abort_on_close(stream: trio.abc.Stream) -> None:
    """Make closing a TCP ``stream`` send a reset rather than a FIN (``SO_LINGER`` 0).

    For connections a server cuts in their handshake (a flood's): a reset leaves no
    ``TIME_WAIT`` entry behind on the server, however many it cuts. Streams that are
    not TCP sockets are left alone.
    """
    sock = getattr(stream, "socket", None)
    if sock is None or sock.family not in (trio.socket.AF_INET, trio.socket.AF_INET6):
        return
    # OSError: already reset by the peer, so closing sends nothing anyway
    with contextlib.suppress(OSError):
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_LINGER, struct.pack("ii", 1, 0))


def format_sockaddr(sockaddr: tuple[str, int] | tuple[str, int, int, int]) -> str:
    """Render an AF_INET/AF_INET6 socket address as ``host:port`` / ``[host]:port``."""
    host, port = sockaddr[0], sockaddr[1]
    if ":" in host:
        return f"[{host}]:{port}"
    return f"{host}:{port}"


def apply_tcp_options(stream: trio.abc.Stream, options: Options | None) -> None:
    """Set the socket options a user asked for (``tcp_keepalive*``, ``sndbuf``,
    ``rcvbuf``) on one TCP connection; left to the system where they are None. A
    stream that is not a TCP socket is left alone."""
    sock = getattr(stream, "socket", None)
    if options is None or sock is None:
        return
    if sock.family not in (trio.socket.AF_INET, trio.socket.AF_INET6):
        return
    S, T = trio.socket, trio.socket.IPPROTO_TCP
    wanted: list[tuple[int, int, int | None]] = [
        (S.SOL_SOCKET, S.SO_SNDBUF, options.sndbuf),
        (S.SOL_SOCKET, S.SO_RCVBUF, options.rcvbuf),
    ]
    keepalive = options.tcp_keepalive
    if keepalive is not None:
        wanted.append((S.SOL_SOCKET, S.SO_KEEPALIVE, int(keepalive)))
    for name, value in (
        ("TCP_KEEPIDLE", options.tcp_keepalive_idle),
        ("TCP_KEEPINTVL", options.tcp_keepalive_intvl),
        ("TCP_KEEPCNT", options.tcp_keepalive_cnt),
    ):
        constant = getattr(S, name, None)
        if constant is not None and value is not None:
            wanted.append((T, constant, max(1, round(value))))
    for level, option, value in wanted:
        if value is not None:
            with contextlib.suppress(OSError):  # a connection reset already
                sock.setsockopt(level, option, value)


class TCPListener(SocketListenerBase):
    """A bound, listening TCP socket; :meth:`accept` yields one stream per peer."""

    def __init__(
        self, listener: trio.SocketListener, endpoint: str, options: Options | None = None
    ) -> None:
        super().__init__(listener, endpoint)
        #: the socket's options, applied to every accepted connection
        self.options = options

    async def accept(self) -> tuple[trio.SocketStream, str]:
        """Wait for a peer; return its stream and its address as ``host:port``."""
        stream = await self._listener.accept()
        apply_tcp_options(stream, self.options)
        try:
            peer = format_sockaddr(stream.socket.getpeername())
        except OSError:
            # The peer may already have reset the connection; the stream itself will
            # report that on first use, so a missing address is not worth failing for.
            peer = ""
        return stream, peer


async def listen_tcp(endpoint: Endpoint, *, backlog: int = DEFAULT_BACKLOG) -> TCPListener:
    """Bind and listen on *endpoint* (``tcp://host:port``).

    ``*`` binds 0.0.0.0 (IPv4 only, as libzmq without ZMQ_IPV6); a host name binds the
    first address it resolves to, so that the bound endpoint is a single address.
    Raises :class:`EndpointError` if the host does not resolve, ``OSError`` (with the
    endpoint in the message) if the bind fails.
    """
    if endpoint.transport != "tcp" or endpoint.host is None or endpoint.port is None:
        raise EndpointError(f"endpoint {str(endpoint)!r} is not a tcp endpoint")
    host = "0.0.0.0" if endpoint.host == "*" else endpoint.host
    try:
        infos = await trio.socket.getaddrinfo(
            host, endpoint.port, type=trio.socket.SOCK_STREAM, flags=trio.socket.AI_PASSIVE
        )
    except trio.socket.gaierror as exc:
        raise EndpointError(
            f"cannot bind {endpoint}: host {endpoint.host!r} does not resolve ({exc.strerror})"
        ) from exc
    if not infos:
        raise EndpointError(f"cannot bind {endpoint}: host {endpoint.host!r} has no address")
    family, type_, proto, _, sockaddr = infos[0]

    sock = trio.socket.socket(family, type_, proto)
    with closed_on_error(sock, f"cannot bind {endpoint}"):
        # Same choices as trio.open_tcp_listeners: rebinding a port with connections in
        # TIME_WAIT must work (a restarted server), and an IPv6 bind must not silently
        # grab the IPv4 port too.
        sock.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_REUSEADDR, 1)
        if family == trio.socket.AF_INET6:
            sock.setsockopt(trio.socket.IPPROTO_IPV6, trio.socket.IPV6_V6ONLY, 1)
        await sock.bind(sockaddr)
        sock.listen(backlog)
        bound = format_sockaddr(sock.getsockname())
    return TCPListener(trio.SocketListener(sock), f"tcp://{bound}")


async def connect_tcp(endpoint: Endpoint, options: Options | None = None) -> trio.SocketStream:
    """Connect to *endpoint*; any failure (refused, unreachable, unresolvable, longer
    than the ``connect_timeout`` option) is ``OSError``."""
    if endpoint.transport != "tcp" or endpoint.host is None or endpoint.port is None:
        raise EndpointError(f"endpoint {str(endpoint)!r} is not a tcp endpoint")
    timeout = options.connect_timeout if options is not None else None
    try:
        with trio.move_on_after(timeout if timeout is not None else math.inf) as scope:
            stream = await trio.open_tcp_stream(endpoint.host, endpoint.port)
    except OSError as exc:
        raise rename_oserror(exc, f"cannot connect to {endpoint}") from exc
    if scope.cancelled_caught:
        raise os_error(errno.ETIMEDOUT, f"cannot connect to {endpoint}: timed out after {timeout}s")
    apply_tcp_options(stream, options)
    return stream


class TcpTransport(ZmtpStreamTransport):
    """``tcp://host:port``: IPv4, IPv6 in brackets, ``*`` and port 0 on bind; ZMTP."""

    scheme = "tcp"

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """``host:port``; see :func:`~trizmq.transport.addresses.parse_host_port`."""
        host, port = parse_host_port(text, address, for_bind=for_bind)
        return Endpoint(self.scheme, address, host=host, port=port)

    async def listen(self, endpoint: Endpoint, options: Options) -> Listener:
        """Bind and listen (see :func:`listen_tcp`)."""
        listener = await listen_tcp(endpoint, backlog=effective_backlog(options.backlog))
        listener.options = options
        return listener

    async def connect(self, endpoint: Endpoint, options: Options) -> trio.abc.Stream:
        """Connect (see :func:`connect_tcp`)."""
        return await connect_tcp(endpoint, options)

    def abort(self, stream: trio.abc.Stream) -> None:
        """Close with a reset (see :func:`abort_on_close`)."""
        abort_on_close(stream)


#: the tcp transport of the table
TCP = TcpTransport()
