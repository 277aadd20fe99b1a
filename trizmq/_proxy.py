"""The proxy: forward whole messages between two sockets, as libzmq's ``zmq_proxy``.

:func:`proxy` joins a frontend and a backend socket and forwards every message
each one receives to the other, until it is cancelled; :func:`proxy_steerable`
adds a control socket that pauses, resumes, terminates it and asks for its
statistics (``zmq_proxy_steerable``).

Rules:

* One task per direction, in one nursery. A direction exists when its source can
  receive and its destination can send: Pull/Push forwards one way, XSub/XPub
  forwards messages down and subscriptions (``b"\\x01topic"``) up, Router/Dealer
  both ways. No direction at all is a ``ValueError``, raised before anything runs.
* A forwarder awaits one message, then drains every message already waiting with
  ``recv_multipart_nowait`` (up to :data:`BURST` before it awaits again), sending
  each with ``send_multipart_nowait`` and falling back to the awaiting
  ``send_multipart`` when the destination is full, so back-pressure still holds.
* The capture socket gets every forwarded message with ``send_multipart_nowait``;
  when it would block the copy is dropped and counted, never waited for.
* A closed frontend, backend, capture or control socket ends the proxy: it returns
  instead of raising ``trio.ClosedResourceError``.
* Control commands are single frames: ``PAUSE`` (stop forwarding; messages wait in
  the sockets' queues, and a message a forwarder already holds waits with it),
  ``RESUME``, ``TERMINATE`` (return) and ``STATISTICS``. As libzmq 4.3.5 does, every
  command gets a reply when the control socket can send: ``STATISTICS`` the eight
  counters, every other command (an unknown one included) one empty frame, which
  keeps a REP control socket in step. An unknown command is also logged on the
  ``trizmq`` logger and otherwise ignored. A control socket that cannot send (SUB)
  gets no replies (libzmq fails there instead).
* ``STATISTICS`` replies with eight frames, each an unsigned 64-bit integer in the
  host's native byte order (``struct.pack("=Q", n)``, as libzmq copies a
  ``uint64_t``): frontend messages received, frontend bytes received, frontend
  messages sent, frontend bytes sent, then the same four for the backend. A
  multipart message counts once, its bytes are the sum of its frames.
"""

from __future__ import annotations

import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable
from functools import partial

import attrs
import trio

from ._socket import Socket

__all__ = ["ProxyStatistics", "SocketStatistics", "proxy", "proxy_steerable"]

log = logging.getLogger("trizmq")

#: messages a forwarder drains without awaiting before it awaits the next one
BURST = 1000

_UINT64 = struct.Struct("=Q")


@attrs.define(slots=True)
class SocketStatistics:
    """Counters of one side of a proxy (libzmq's ``zmq_socket_stats_t``)."""

    msg_in: int = 0
    bytes_in: int = 0
    msg_out: int = 0
    bytes_out: int = 0


@attrs.define(slots=True)
class ProxyStatistics:
    """What a proxy forwarded, per side, plus the capture copies it dropped."""

    frontend: SocketStatistics = attrs.Factory(SocketStatistics)
    backend: SocketStatistics = attrs.Factory(SocketStatistics)
    capture_dropped: int = 0

    def frames(self) -> list[bytes]:
        """The ``STATISTICS`` reply: eight native-order uint64 frames."""
        return [
            _UINT64.pack(getattr(side, name))
            for side in (self.frontend, self.backend)
            for name in ("msg_in", "bytes_in", "msg_out", "bytes_out")
        ]


class _Gate:
    """PAUSE/RESUME: forwarders wait at the gate while it is closed."""

    def __init__(self) -> None:
        self.paused = False
        self._resumed = trio.Event()

    def pause(self) -> None:
        if not self.paused:
            self.paused = True
            self._resumed = trio.Event()

    def resume(self) -> None:
        self.paused = False
        self._resumed.set()

    async def wait(self) -> None:
        while self.paused:
            await self._resumed.wait()


def _directions(frontend: Socket, backend: Socket) -> list[tuple[Socket, Socket]]:
    for sock in (frontend, backend):
        # a type whose messages carry a group or routing id outside their frames: a
        # proxy forwarding frames alone would drop it, so it is refused up front
        if sock._type.addressed:
            raise ValueError(
                f"proxy: a {sock.socket_type} socket cannot be proxied (its group or routing "
                "id travels outside the frames); forward it with recv_message() and send()"
            )
    directions = [
        (src, dst)
        for src, dst in ((frontend, backend), (backend, frontend))
        if src._strategy.can_recv and dst._strategy.can_send
    ]
    if not directions:
        raise ValueError(
            f"proxy: nothing can be forwarded between a {frontend.socket_type} frontend "
            f"and a {backend.socket_type} backend (neither can receive what the other sends)"
        )
    return directions


def _check_capture(capture: Socket | None) -> None:
    if capture is not None and not capture._strategy.can_send:
        raise ValueError(f"proxy: a {capture.socket_type} capture socket cannot send")


async def _forward(
    src: Socket,
    dst: Socket,
    src_stats: SocketStatistics,
    dst_stats: SocketStatistics,
    stats: ProxyStatistics,
    capture: Socket | None,
    gate: _Gate | None,
) -> None:
    recv = src.recv_multipart
    recv_nowait = src.recv_multipart_nowait
    send_nowait = dst.send_multipart_nowait
    capture_nowait = capture.send_multipart_nowait if capture is not None else None
    while True:
        if gate is not None and gate.paused:
            await gate.wait()
        msg = await recv()
        burst = BURST
        while True:
            if gate is not None and gate.paused:
                await gate.wait()  # hold this message until RESUME
            try:
                send_nowait(msg)
            except trio.WouldBlock:
                await dst.send_multipart(msg)
            size = sum(map(len, msg))
            src_stats.msg_in += 1
            src_stats.bytes_in += size
            dst_stats.msg_out += 1
            dst_stats.bytes_out += size
            if capture_nowait is not None:
                try:
                    capture_nowait(msg)
                except trio.WouldBlock:
                    stats.capture_dropped += 1
            burst -= 1
            if not burst:
                break
            try:
                msg = recv_nowait()
            except trio.WouldBlock:
                break


async def _run(
    frontend: Socket,
    backend: Socket,
    capture: Socket | None,
    stats: ProxyStatistics,
    gate: _Gate | None,
    control: Callable[[], Awaitable[None]] | None,
) -> None:
    directions = _directions(frontend, backend)
    _check_capture(capture)
    sides = {id(frontend): stats.frontend, id(backend): stats.backend}

    async def guarded(fn: Callable[[], Awaitable[None]], scope: trio.CancelScope) -> None:
        with contextlib.suppress(trio.ClosedResourceError):
            await fn()
        scope.cancel()  # a socket is closed, or TERMINATE: the whole proxy ends

    async with trio.open_nursery() as nursery:
        scope = nursery.cancel_scope
        for src, dst in directions:
            forward = partial(
                _forward, src, dst, sides[id(src)], sides[id(dst)], stats, capture, gate
            )
            nursery.start_soon(guarded, forward, scope)
        if control is not None:
            nursery.start_soon(guarded, control, scope)


async def proxy(frontend: Socket, backend: Socket, capture: Socket | None = None) -> None:
    """Forward whole messages between ``frontend`` and ``backend`` until cancelled.

    Each direction where the source can receive and the destination can send is
    forwarded (XSub/XPub: messages down, subscriptions up; Router/Dealer: both
    ways; Pull/Push: one way), one task per direction; back-pressure holds, as a
    forwarder waits when its destination is full. Every forwarded message is also
    sent to ``capture``, without waiting: a copy the capture cannot take at once is
    dropped. Returns when one of the sockets is closed.

    Args:
        frontend: An entered socket; what it receives is sent on ``backend``.
        backend: An entered socket; what it receives is sent on ``frontend``.
        capture: An entered socket that gets a copy of every forwarded message
            (multipart, as forwarded), or None.

    Raises:
        ValueError: When nothing can be forwarded (two Push sockets), the capture
            cannot send, or a socket is a Radio, Dish, Server or Peer (their group or
            routing id travels outside the frames). Raised before anything runs.
    """
    await _run(frontend, backend, capture, ProxyStatistics(), None, None)


async def proxy_steerable(
    frontend: Socket,
    backend: Socket,
    capture: Socket | None = None,
    *,
    control: Socket,
) -> None:
    """:func:`proxy`, steered by single-frame commands received on ``control``.

    ``b"PAUSE"`` stops forwarding (messages queue in the sockets), ``b"RESUME"``
    restarts it, ``b"TERMINATE"`` makes this function return, ``b"STATISTICS"``
    replies with eight frames, each a uint64 in native byte order
    (``struct.pack("=Q", n)``, as libzmq): frontend messages received, frontend
    bytes received, frontend messages sent, frontend bytes sent, then the same
    four for the backend (a multipart message counts once, its bytes are the sum of
    its frames). When ``control`` can send, every other command, an unknown one
    included, is answered with one empty frame, as libzmq 4.3.5 does, so a REP
    control socket stays in step; a control socket that cannot send (SUB) gets no
    replies. An unknown command is logged on the ``trizmq`` logger and ignored.
    Like :func:`proxy`, it also returns when one of the sockets (``control``
    included) is closed.

    Args:
        frontend: An entered socket; what it receives is sent on ``backend``.
        backend: An entered socket; what it receives is sent on ``frontend``.
        capture: An entered socket that gets a copy of every forwarded message, or
            None.
        control: An entered socket that receives the commands (keyword only), such
            as a Rep, a Pair or a Sub.

    Raises:
        ValueError: When ``control`` cannot receive, or for the reasons
            :func:`proxy` gives.
    """
    if not control._strategy.can_recv:
        raise ValueError(f"proxy_steerable: a {control.socket_type} control socket cannot receive")
    stats = ProxyStatistics()
    gate = _Gate()
    replies = control._strategy.can_send

    async def steer() -> None:
        while True:
            msg = await control.recv_multipart()
            command = msg[0] if len(msg) == 1 else None
            reply = [b""]
            if command == b"PAUSE":
                gate.pause()
            elif command == b"RESUME":
                gate.resume()
            elif command == b"STATISTICS":
                reply = stats.frames()
            elif command != b"TERMINATE":
                log.warning("proxy_steerable: ignoring unknown control command %r", msg)
            if replies:
                try:
                    control.send_multipart_nowait(reply)
                except trio.WouldBlock:
                    log.warning("proxy_steerable: control socket full, reply to %r dropped", msg)
            if command == b"TERMINATE":
                return  # guarded() then cancels the forwarders

    await _run(frontend, backend, capture, stats, gate, steer)
