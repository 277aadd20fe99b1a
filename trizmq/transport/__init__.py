"""Byte-stream transports: turn an :class:`~trizmq._endpoint.Endpoint` into trio streams.

``listen`` and ``connect`` dispatch on ``endpoint.transport`` (``tcp`` or ``ipc``); what
they hand back are plain :class:`trio.abc.Stream` objects with nothing ZeroMQ-specific.
"""

from __future__ import annotations

from typing import Any, Protocol

import trio

from .._endpoint import Endpoint
from .._errors import EndpointError
from .ipc import IPCListener, connect_ipc, listen_ipc
from .tcp import DEFAULT_BACKLOG, TCPListener, connect_tcp, listen_tcp

__all__ = [
    "DEFAULT_BACKLOG",
    "STREAM_TRANSPORTS",
    "IPCListener",
    "Listener",
    "TCPListener",
    "connect",
    "listen",
    "virtual_network",
]

STREAM_TRANSPORTS: frozenset[str] = frozenset({"tcp", "ipc"})

#: the ``trizmq.testing`` virtual network installed in the current ``trio.run``, if any;
#: while one is, tcp and ipc endpoints go through it instead of the operating system
virtual_network: trio.lowlevel.RunVar[Any] = trio.lowlevel.RunVar(
    "trizmq_virtual_network", default=None
)


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


async def listen(endpoint: Endpoint, *, backlog: int = DEFAULT_BACKLOG) -> Listener:
    """Bind *endpoint*; ``OSError`` (naming the endpoint) if the address is taken."""
    network = virtual_network.get()
    if network is not None and endpoint.transport in STREAM_TRANSPORTS:
        return await network.listen(endpoint)  # type: ignore[no-any-return]
    if endpoint.transport == "tcp":
        return await listen_tcp(endpoint, backlog=backlog)
    if endpoint.transport == "ipc":
        return await listen_ipc(endpoint, backlog=backlog)
    raise EndpointError(
        f"endpoint {str(endpoint)!r}: {endpoint.transport} is not a stream transport"
    )


async def connect(endpoint: Endpoint) -> trio.abc.Stream:
    """Open a stream to *endpoint*; every failure to reach the peer is ``OSError``."""
    network = virtual_network.get()
    if network is not None and endpoint.transport in STREAM_TRANSPORTS:
        return await network.connect(endpoint)  # type: ignore[no-any-return]
    if endpoint.transport == "tcp":
        return await connect_tcp(endpoint)
    if endpoint.transport == "ipc":
        return await connect_ipc(endpoint)
    raise EndpointError(
        f"endpoint {str(endpoint)!r}: {endpoint.transport} is not a stream transport"
    )
