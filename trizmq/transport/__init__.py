"""Transports: the one table from endpoint scheme to transport.

A byte-stream transport (:class:`~trizmq.transport.base.StreamTransport`: tcp, ipc,
ws, wss, lz4+tcp, zstd+tcp)
parses its endpoints, listens, connects and names the codec of its bytes; a
message transport (:class:`~trizmq.transport.base.MessageTransport`: inproc, udp)
carries whole messages. Adding a transport is one module and one entry in
:data:`TRANSPORTS` (or a call to :func:`register_transport`, the public seam).
"""

from __future__ import annotations

import trio

from .._errors import EndpointError
from .._options import Options
from .base import (
    Codec,
    Endpoint,
    LinkHost,
    LinkPeer,
    LinkQueue,
    Listener,
    MessageBinding,
    MessageTransport,
    SocketKind,
    StreamTransport,
    Transport,
    parse_endpoint,
    register_transport,
    run_transports,
    schemes,
    transport_for,
    unregister_transport,
    zmtp_codec,
)
from .compressed_tcp import LZ4_TCP, ZSTD_TCP
from .inproc import INPROC
from .ipc import IPC, IPCListener
from .tcp import DEFAULT_BACKLOG, TCP, TCPListener
from .udp import UDP
from .ws import WS, WSS

__all__ = [
    "DEFAULT_BACKLOG",
    "SUPPORTED_TRANSPORTS",
    "TRANSPORTS",
    "Codec",
    "Endpoint",
    "IPCListener",
    "LinkHost",
    "LinkPeer",
    "LinkQueue",
    "Listener",
    "MessageBinding",
    "MessageTransport",
    "SocketKind",
    "StreamTransport",
    "TCPListener",
    "Transport",
    "connect",
    "listen",
    "parse_endpoint",
    "register_transport",
    "run_transports",
    "schemes",
    "transport_for",
    "unregister_transport",
    "zmtp_codec",
]

#: the built-in transports, in the order their schemes are listed to users
TRANSPORTS: tuple[Transport, ...] = (TCP, IPC, INPROC, UDP, WS, WSS, LZ4_TCP, ZSTD_TCP)
for _transport in TRANSPORTS:
    register_transport(_transport)

#: the schemes trizmq supports out of the box
SUPPORTED_TRANSPORTS: frozenset[str] = frozenset(t.scheme for t in TRANSPORTS)


def _stream_transport(endpoint: Endpoint) -> StreamTransport:
    transport = transport_for(endpoint.transport)
    if not isinstance(transport, StreamTransport):
        raise EndpointError(
            f"endpoint {str(endpoint)!r}: {endpoint.transport} is not a stream transport"
        )
    return transport


def _default_options() -> Options:
    return Options()


async def listen(endpoint: Endpoint) -> Listener:
    """Bind a byte-stream *endpoint*; ``OSError`` (naming the endpoint) if it is taken."""
    return await _stream_transport(endpoint).listen(endpoint, _default_options())


async def connect(endpoint: Endpoint) -> trio.abc.Stream:
    """Open a stream to *endpoint*; every failure to reach the peer is ``OSError``."""
    return await _stream_transport(endpoint).connect(endpoint, _default_options())
