"""``inproc://``: in-memory links between the sockets of one ``trio.run``.

No bytes and no ZMTP: a link is two shared pipes, one per direction, so whole
messages pass as objects. The registry of bound names lives in a
``trio.lowlevel.RunVar``, so every ``trio.run`` has its own namespace. Connecting
before the name is bound works as in libzmq 4.x: the connecter's pipes exist at
once (messages queue) and are handed to the binder when it binds.

Rule: linking never touches the other socket's runtime directly; each side makes
and routes its own peer through its :class:`~trizmq.transport.base.LinkHost`, and
each end can unlink both.
"""

from __future__ import annotations

import errno
import logging
from typing import Generic, cast

import trio

from .. import _monitor as monitor
from .._errors import os_error
from .addresses import check_inproc_name
from .base import Endpoint, LinkHost, LinkPeer, MessageBinding, PeerT

__all__ = ["INPROC", "InprocRegistry", "InprocTransport", "registry"]

log = logging.getLogger("trizmq")

_REGISTRY: trio.lowlevel.RunVar[InprocRegistry[LinkPeer]] = trio.lowlevel.RunVar("trizmq_inproc")


class InprocRegistry(Generic[PeerT]):
    """Bound inproc names and the connects still waiting for a binder."""

    def __init__(self) -> None:
        #: name -> the binding socket
        self.bound: dict[str, LinkHost[PeerT]] = {}
        #: name -> [(connecting socket, its peer)] waiting for a bind
        self.pending: dict[str, list[tuple[LinkHost[PeerT], PeerT]]] = {}

    def bind(self, name: str, host: LinkHost[PeerT]) -> list[tuple[LinkHost[PeerT], PeerT]]:
        """Register ``host`` under ``name``; return the connects that were waiting."""
        if name in self.bound:
            raise os_error(errno.EADDRINUSE, f"inproc://{name} is already bound")
        self.bound[name] = host
        return self.pending.pop(name, [])

    def unbind(self, name: str, host: LinkHost[PeerT]) -> None:
        """Forget ``name`` if ``host`` holds it."""
        if self.bound.get(name) is host:
            del self.bound[name]

    def wait(self, name: str, host: LinkHost[PeerT], peer: PeerT) -> None:
        """Park a connect until ``name`` is bound."""
        self.pending.setdefault(name, []).append((host, peer))

    def forget(self, peer: PeerT) -> None:
        """Drop the waiting connect of ``peer``."""
        for name, waiting in list(self.pending.items()):
            kept = [(h, p) for h, p in waiting if p is not peer]
            if kept:
                self.pending[name] = kept
            else:
                del self.pending[name]


def registry() -> InprocRegistry[PeerT]:
    """The inproc namespace of the current ``trio.run``."""
    try:
        reg = _REGISTRY.get()
    except LookupError:
        reg = InprocRegistry()
        _REGISTRY.set(reg)
    # the sockets of one run all make peers of the runtime's one class: a link hands
    # one socket's peer to another (``across``)
    return cast("InprocRegistry[PeerT]", reg)


def _link(
    binder: LinkHost[PeerT], connector: LinkHost[PeerT], theirs: PeerT, endpoint: str
) -> None:
    """Join a connecting socket's peer to a new peer of the binder over the same pipes."""
    if not binder.socket_kind.accepts(connector.socket_type):
        log.warning(
            "%s: refused inproc peer: %s cannot talk to %s",
            endpoint,
            connector.socket_type,
            binder.socket_type,
        )
        connector.link_down(theirs)
        return
    ours = binder.new_link_peer(endpoint, across=theirs)
    if not binder.attach(ours):
        log.warning("%s: refused: a %s socket takes one peer only", endpoint, binder.socket_type)
        binder.link_down(ours)
        connector.link_down(theirs)
        return

    def unlink() -> None:
        binder.link_down(ours)
        connector.link_down(theirs)

    ours.closer = theirs.closer = unlink
    binder.link_up(ours, connector.socket_type, connector.identity)
    connector.link_up(theirs, binder.socket_type, binder.identity)


class _InprocBound(Generic[PeerT]):
    """A bound inproc name."""

    def __init__(self, name: str, host: LinkHost[PeerT]) -> None:
        self.name = name
        self.host = host
        self.endpoint = f"inproc://{name}"

    ended = False
    peer = None

    def holds(self, peer: PeerT) -> bool:
        return False

    async def aclose(self) -> None:
        """Free the name; the links made stay until a side closes."""
        reg: InprocRegistry[PeerT] = registry()
        reg.unbind(self.name, self.host)
        await trio.lowlevel.checkpoint()


class _InprocConnected(Generic[PeerT]):
    """A connected inproc name: the connecting socket's peer of the link."""

    def __init__(self, endpoint: str, host: LinkHost[PeerT], peer: PeerT) -> None:
        self.endpoint = endpoint
        self.host = host
        self.peer = peer

    @property
    def ended(self) -> bool:
        """True once the link was refused or ended."""
        return self.peer.gone

    def holds(self, peer: PeerT) -> bool:
        return peer is self.peer

    async def aclose(self) -> None:
        """Leave: a waiting connect is forgotten, a live link ends on both sides."""
        reg: InprocRegistry[PeerT] = registry()
        reg.forget(self.peer)
        closer = self.peer.closer
        if closer is not None:
            closer()
        else:
            self.host.link_down(self.peer)
        await trio.lowlevel.checkpoint()


class InprocTransport:
    """``inproc://name``: links between the sockets of one ``trio.run``."""

    scheme = "inproc"

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """A name of at most 255 characters."""
        return Endpoint(self.scheme, address, path=check_inproc_name(text, address))

    async def bind(self, endpoint: Endpoint, host: LinkHost[PeerT]) -> MessageBinding[PeerT]:
        """Register the name and take over the connects that waited for it."""
        name = endpoint.path or ""
        key = str(endpoint)
        reg: InprocRegistry[PeerT] = registry()
        waiting = reg.bind(name, host)
        await trio.lowlevel.checkpoint()
        host.emit(monitor.Listening(key))
        for connector, peer in waiting:
            _link(host, connector, peer, key)
        return _InprocBound(name, host)

    async def connect(self, endpoint: Endpoint, host: LinkHost[PeerT]) -> MessageBinding[PeerT]:
        """Make the link's pipes now; hand them to the binder now or when it binds."""
        name = endpoint.path or ""
        key = str(endpoint)
        out_hwm, in_hwm = host.options.sndhwm, host.options.rcvhwm
        # libzmq sizes an inproc pipe by both ends' marks; the binder's are unknown yet
        hwm = out_hwm + in_hwm if out_hwm and in_hwm else 0
        peer = host.new_link_peer(key, out_hwm=hwm, in_hwm=hwm, shared_queue=True)
        host.attach(peer)
        reg: InprocRegistry[PeerT] = registry()
        binder = reg.bound.get(name)
        if binder is None:
            reg.wait(name, host, peer)
        else:
            _link(binder, host, peer, key)
        await trio.lowlevel.checkpoint()
        return _InprocConnected(key, host, peer)


#: the inproc transport of the table
INPROC = InprocTransport()
