"""The lz4+tcp:// and zstd+tcp:// transports: tcp with every message part compressed.

``lz4+tcp://host:port`` and ``zstd+tcp://host:port`` are TCP connections (hosts and
ports as for tcp: ``*`` and port 0 on bind, IPv6 in brackets) whose bytes the
:class:`~trizmq.zmtp.compressed.CompressedConnection` codec speaks: ZMTP with each
message part compressed, or passed plain, as omq.rs's wire formats say. The
socket's ``compression_level``, ``compression_dict`` and ``compression_auto_train``
options configure it; they are checked against the scheme's format when an
endpoint is bound or connected (an :class:`~trizmq.EndpointError` naming the option),
as is the library the scheme needs (``pip install 'trizmq[compression]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import trio

from .._errors import EndpointError
from .addresses import parse_host_port
from .base import Codec, Endpoint, Listener, SocketKind, effective_backlog, zmtp_connection
from .tcp import abort_on_close, connect_tcp, listen_tcp

if TYPE_CHECKING:
    from .._options import Options

__all__ = ["LZ4_TCP", "ZSTD_TCP", "CompressedTcpTransport"]


class CompressedTcpTransport:
    """``lz4+tcp://`` or ``zstd+tcp://`` (``scheme``): tcp under the compressed codec."""

    def __init__(self, scheme: str) -> None:
        self.scheme = scheme

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """``host:port``, as for tcp."""
        host, port = parse_host_port(text, address, for_bind=for_bind)
        return Endpoint(self.scheme, address, host=host, port=port)

    def _tcp(self, endpoint: Endpoint) -> Endpoint:
        assert endpoint.host is not None and endpoint.port is not None
        return Endpoint("tcp", f"{endpoint.host}:{endpoint.port}", endpoint.host, endpoint.port)

    def _check(self, what: str, endpoint: Endpoint, options: Options) -> None:
        """The options and the library fit the scheme; else ``EndpointError`` saying
        what to change."""
        from ..zmtp.compression import check_settings, require

        try:
            check_settings(self.scheme, options.compression_level, options.compression_dict)
            require(self.scheme)
        except (ValueError, ImportError) as exc:
            raise EndpointError(f"cannot {what} {endpoint}: {exc}") from None

    async def listen(self, endpoint: Endpoint, options: Options) -> Listener:
        """Bind and listen as tcp; the endpoint returned keeps the scheme."""
        self._check("bind", endpoint, options)
        listener = await listen_tcp(self._tcp(endpoint), backlog=effective_backlog(options.backlog))
        listener.options = options
        listener.endpoint = f"{self.scheme}://{listener.endpoint.partition('://')[2]}"
        return listener

    async def connect(self, endpoint: Endpoint, options: Options) -> trio.abc.Stream:
        """Connect as tcp."""
        self._check("connect to", endpoint, options)
        return await connect_tcp(self._tcp(endpoint), options)

    def codec(
        self, kind: SocketKind, options: Options, endpoint: Endpoint, *, client: bool
    ) -> Codec:
        """ZMTP with its parts compressed, with the socket's mechanism and options."""
        from ..zmtp.compressed import CompressedConnection, wire_limit

        # the inner connection bounds a message on the wire, and refuses no
        # subscription at its header (see trizmq.zmtp.compressed)
        inner = zmtp_connection(
            kind, options, maxmsgsize=wire_limit(options.maxmsgsize), max_subscription=-1
        )
        return CompressedConnection(
            inner,
            scheme=self.scheme,
            maxmsgsize=options.maxmsgsize,
            level=options.compression_level,
            dictionary=options.compression_dict,
            auto_train=options.compression_auto_train,
        )

    def abort(self, stream: trio.abc.Stream) -> None:
        """Close with a reset (see :func:`~trizmq.transport.tcp.abort_on_close`)."""
        abort_on_close(stream)


#: the two compressed transports of the table
LZ4_TCP = CompressedTcpTransport("lz4+tcp")
ZSTD_TCP = CompressedTcpTransport("zstd+tcp")
