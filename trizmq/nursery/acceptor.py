"""The acceptor of one bound byte-stream endpoint: a connection actor per peer.

Rules:

* A binding side makes a fresh peer per accepted connection; the peer lives as long
  as its connection, and its unsent messages are dropped when it ends (unread
  incoming messages stay readable until drained), as 29/PUBSUB and 28/REQREP say.
* At most ``max_handshakes`` accepted connections may be in their handshake at
  once: past that the kernel's backlog holds newcomers, so a flood of connections
  that never finish their handshake costs bounded memory.
* An ``accept`` that fails for lack of resources (EMFILE) is logged and retried
  after a breath; the socket goes on serving its other peers.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio
from trio.lowlevel import enable_ki_protection

from .. import _monitor as monitor
from .connection import ConnectionActor
from .pipe import Pipe

if TYPE_CHECKING:
    from ..transport.base import Listener, StreamTransport
    from .runtime import SocketRuntime

__all__ = ["run_acceptor"]

log = logging.getLogger("trizmq")


@enable_ki_protection
async def run_acceptor(
    runtime: SocketRuntime,
    transport: StreamTransport,
    listener: Listener,
    task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Accept connections on ``listener`` until unbound or closed."""
    endpoint = listener.endpoint
    slots = runtime.handshake_slots
    with trio.CancelScope() as scope:
        task_status.started(scope)
        while True:
            await slots.acquire()
            try:
                stream, address = await listener.accept()
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                slots.release()
                return
            except OSError as exc:
                # EMFILE and friends: log, breathe, go on serving the others
                log.warning("%s: accept failed: %s", endpoint, exc)
                slots.release()
                await trio.sleep(0.1)
                continue
            runtime.emit(monitor.Accepted(endpoint, address))
            runtime.nursery.start_soon(_serve, runtime, transport, stream, endpoint, address)


@enable_ki_protection
async def _serve(
    runtime: SocketRuntime,
    transport: StreamTransport,
    stream: trio.abc.Stream,
    endpoint: str,
    address: str,
) -> None:
    """One accepted connection: a fresh peer that lives as long as the stream."""
    options = runtime.options
    peer = runtime.peers.new_peer(endpoint, Pipe(options.sndhwm), Pipe(options.rcvhwm))
    peer.remote_address = address
    slot = [True]

    def release() -> None:
        if slot[0]:
            slot[0] = False
            runtime.handshake_slots.release()

    actor = ConnectionActor(runtime, stream, peer, transport.codec(runtime.socket_type, options))
    try:
        await actor.run(kept=False, handshake_done=release)
    finally:
        release()
        runtime.peers.leave(peer)
        with trio.CancelScope(shield=True):
            await stream.aclose()
