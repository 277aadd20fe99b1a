"""The ws:// and wss:// transports: ZeroMQ over WebSocket (ZWS 2.0, RFC 45).

``ws://host:port[/path]`` is a TCP connection whose bytes the
:class:`~trizmq.zmtp.zws.ZwsConnection` codec frames (the HTTP upgrade, then one
WebSocket message per ZMTP frame); ``wss://`` is the same inside TLS (trio's
``SSLStream``), configured by the ``ssl_context`` option: a server context to bind
(required), a client context to connect (``ssl.create_default_context()`` when
none is given, so the server's certificate and host name are checked).

The path defaults to ``/``; a bound socket refuses an upgrade for another path
(404). Hosts and ports are those of tcp (``*`` and port 0 on bind).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import trio

from .._errors import EndpointError
from .addresses import parse_host_port
from .base import (
    Codec,
    Endpoint,
    Listener,
    ListenerBase,
    SocketKind,
    effective_backlog,
    zmtp_connection,
)
from .tcp import TCPListener, abort_on_close, connect_tcp, listen_tcp

if TYPE_CHECKING:
    from .._options import Options

__all__ = ["WS", "WSS", "WsListener", "WsTransport", "split_path"]


def split_path(text: str, address: str) -> tuple[str, str]:
    """``host:port`` and the path (``/`` when none) of a ws address."""
    hostport, slash, rest = address.partition("/")
    path = slash + rest if slash else "/"
    if any(c in path for c in " \r\n\t#") or "\x00" in path:
        raise EndpointError(f"endpoint {text!r}: the path {path!r} is not a valid URL path")
    if not hostport:
        raise EndpointError(f"endpoint {text!r} has no host:port before the path")
    return hostport, path


class WsListener(ListenerBase):
    """A bound ws/wss endpoint: TCP accepts, wrapped in TLS for wss."""

    def __init__(self, tcp: TCPListener, endpoint: str, context: ssl.SSLContext | None) -> None:
        self._tcp = tcp
        self.endpoint = endpoint
        self._context = context

    async def accept(self) -> tuple[trio.abc.Stream, str]:
        """The next peer's stream (TLS not yet negotiated: the handshake's first read
        does it, within the handshake's deadline) and its address."""
        stream, address = await self._tcp.accept()
        if self._context is None:
            return stream, address
        return trio.SSLStream(
            stream, self._context, server_side=True, https_compatible=True
        ), address

    async def aclose(self) -> None:
        """Stop listening; idempotent."""
        await self._tcp.aclose()


class WsTransport:
    """``ws://host:port[/path]`` (or, with ``secure``, ``wss://``); the ZWS codec."""

    def __init__(self, secure: bool) -> None:
        self.secure = secure
        self.scheme = "wss" if secure else "ws"

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """``host:port`` as for tcp, then an optional path starting with ``/``."""
        hostport, path = split_path(text, address)
        host, port = parse_host_port(text, hostport, for_bind=for_bind)
        return Endpoint(self.scheme, address, host=host, port=port, path=path)

    def _tcp(self, endpoint: Endpoint) -> Endpoint:
        assert endpoint.host is not None and endpoint.port is not None
        return Endpoint("tcp", f"{endpoint.host}:{endpoint.port}", endpoint.host, endpoint.port)

    async def listen(self, endpoint: Endpoint, options: Options) -> Listener:
        """Bind as tcp; wss needs the ``ssl_context`` option (a server context)."""
        context = options.ssl_context
        if self.secure and context is None:
            raise EndpointError(
                f"cannot bind {endpoint}: wss:// needs the ssl_context option "
                "(an ssl.SSLContext with the server's certificate)"
            )
        tcp = await listen_tcp(self._tcp(endpoint), backlog=effective_backlog(options.backlog))
        tcp.options = options
        bound = tcp.endpoint.partition("://")[2]
        return WsListener(tcp, f"{self.scheme}://{bound}{endpoint.path or '/'}", context)

    async def connect(self, endpoint: Endpoint, options: Options) -> trio.abc.Stream:
        """Connect as tcp; for wss, TLS with the ``ssl_context`` option or the
        system's default context (certificate and host name checked)."""
        stream = await connect_tcp(self._tcp(endpoint), options)
        if not self.secure:
            return stream
        context = options.ssl_context or ssl.create_default_context()
        return trio.SSLStream(stream, context, server_hostname=endpoint.host, https_compatible=True)

    def codec(
        self, kind: SocketKind, options: Options, endpoint: Endpoint, *, client: bool
    ) -> Codec:
        """ZWS 2.0 with the socket's mechanism."""
        from ..zmtp.zws import ZwsConnection

        host = endpoint.host or ""
        shown = f"[{host}]" if ":" in host else host
        return ZwsConnection(
            zmtp_connection(kind, options),
            client=client,
            host=f"{shown}:{endpoint.port}",
            path=endpoint.path or "/",
        )

    def abort(self, stream: trio.abc.Stream) -> None:
        """Close with a reset, under TLS too."""
        inner = stream.transport_stream if isinstance(stream, trio.SSLStream) else stream
        abort_on_close(inner)


#: the ws and wss transports of the table
WS = WsTransport(secure=False)
WSS = WsTransport(secure=True)
