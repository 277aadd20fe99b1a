"""``memory://``: a test-only byte-stream transport, registered through the public seam.

It proves that a transport is one module plus one registration: endpoints
``memory://NAME`` (``memory://*`` on bind picks a fresh name), listeners in a dict,
and connections made of ``trio.testing.memory_stream_pair``, framed by ZMTP like
tcp. Nothing in trizmq knows about it.
"""

from __future__ import annotations

import errno
import itertools
from collections.abc import Iterator
from contextlib import contextmanager

import trio
import trio.testing

from trizmq._errors import EndpointError
from trizmq._options import Options
from trizmq.transport import (
    Codec,
    Endpoint,
    Listener,
    SocketKind,
    register_transport,
    unregister_transport,
    zmtp_codec,
)

_FRESH = itertools.count()


class MemoryListener:
    """A bound ``memory://`` name: accepted streams arrive on a channel."""

    def __init__(self, transport: MemoryTransport, name: str) -> None:
        self.transport = transport
        self.name = name
        self.endpoint = f"memory://{name}"
        self.send_channel, self.receive_channel = trio.open_memory_channel[
            tuple[trio.abc.Stream, str]
        ](100)

    async def accept(self) -> tuple[trio.abc.Stream, str]:
        try:
            return await self.receive_channel.receive()
        except trio.EndOfChannel:
            raise trio.ClosedResourceError("memory listener closed") from None

    async def aclose(self) -> None:
        if self.transport.listeners.get(self.name) is self:
            del self.transport.listeners[self.name]
        self.send_channel.close()
        await self.receive_channel.aclose()


class MemoryTransport:
    """``memory://NAME``: streams between sockets of one process, in memory."""

    scheme = "memory"

    def __init__(self) -> None:
        self.listeners: dict[str, MemoryListener] = {}

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        if address == "*" and not for_bind:
            raise EndpointError(f"endpoint {text!r}: memory://* only works with bind")
        return Endpoint(self.scheme, address, path=address)

    async def listen(self, endpoint: Endpoint, options: Options) -> Listener:
        await trio.lowlevel.checkpoint()
        name = endpoint.path or ""
        if name == "*":
            name = f"fresh-{next(_FRESH)}"
        if name in self.listeners:
            raise OSError(errno.EADDRINUSE, f"memory://{name} is already bound")
        listener = MemoryListener(self, name)
        self.listeners[name] = listener
        return listener

    async def connect(self, endpoint: Endpoint, options: Options) -> trio.abc.Stream:
        await trio.lowlevel.checkpoint()
        listener = self.listeners.get(endpoint.path or "")
        if listener is None:
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"{endpoint}: nobody listens")
        client, server = trio.testing.memory_stream_pair()
        try:
            listener.send_channel.send_nowait((server, "memory"))
        except (trio.WouldBlock, trio.ClosedResourceError):
            raise ConnectionRefusedError(errno.ECONNREFUSED, f"{endpoint}: refused") from None
        return client

    def codec(
        self, kind: SocketKind, options: Options, endpoint: Endpoint, *, client: bool
    ) -> Codec:
        return zmtp_codec(kind, options)

    def abort(self, stream: trio.abc.Stream) -> None:
        pass


@contextmanager
def memory_transport() -> Iterator[MemoryTransport]:
    """``memory://`` in the transport table for the duration of the block."""
    transport = MemoryTransport()
    register_transport(transport)
    try:
        yield transport
    finally:
        unregister_transport(transport.scheme)


@contextmanager
def registered(transport: str) -> Iterator[str]:
    """For a test parametrized over transports: ``memory`` is in the table meanwhile."""
    if transport != "memory":
        yield transport
        return
    with memory_transport():
        yield transport
