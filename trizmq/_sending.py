"""Sending: every send of a socket, each written once on one core.

The core is :meth:`Sending._try_send_message`: a message in the strategy's form
handed to the strategy's ``route`` (its ``send``, or a shortcut it offers that does
what ``send`` would, such as its one peer's pipe's ``offer``), through the fast
path's ``FastPath.route`` where a connection's writer is idle (the sending task then
writes it itself); False where the pattern says to wait. Every public ``*_nowait``
form makes its message and calls the core, raising ``trio.WouldBlock`` on False;
every awaiting form is :meth:`Sending._send_message`, trio's shape of ``send`` on
``send_nowait``: the cancellation half of a checkpoint, the core, a park where it
would block (then the core again, once a queue may take the message), and a turn.
The core answers with a value, not ``WouldBlock``: a request-reply loop waits at
nearly every call, and an exception raised and caught costs it more than the rest
of the call.

Checkpoints: trio's convention is that every ``await`` is a checkpoint. The sends
keep the *cancellation* half of it on every call, but reschedule only when they
must wait or once every :data:`YIELD_EVERY` calls that did not (a full reschedule
costs ~12 µs here against ~1 µs to queue a message): a loop of sends that never
waits still lets other tasks run, and still notices cancellation at every call.
On the fast path the cancellation test is the trio probe's, without a coroutine,
and ``send`` and ``send_multipart`` run compiled with their core and that test
inlined (``trizmq.nursery.fastpath.hot_paths``, which keeps this source's lines).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import trio

from ._errors import NotSupportedError
from .nursery.fastpath.hot_paths import hot_paths
from .zmtp.encoding import Buffer

if TYPE_CHECKING:
    from .nursery.fastpath.socket_state import FastPath
    from .nursery.runtime import SocketRuntime
    from .patterns.sockets import SocketStrategy

__all__ = ["SEND_CHUNK", "YIELD_EVERY", "Sending", "frame_of"]

#: a send or receive that did not wait still yields to the scheduler once per this many calls
YIELD_EVERY = 128
#: send_many routes the messages it is given in batches of up to this many
SEND_CHUNK = 256

_BYTES_LIKE = (bytes, bytearray, memoryview)
_checkpoint_if_cancelled = trio.lowlevel.checkpoint_if_cancelled
_checkpoint = trio.lowlevel.checkpoint


def frame_of(data: object) -> bytes:
    """One frame of a message: ``bytes`` as they are, other bytes-like objects copied
    (the caller may reuse a ``bytearray`` before the writer encodes it); a ``str`` or
    anything else raises ``TypeError``."""
    if data.__class__ is bytes:
        return data
    if isinstance(data, _BYTES_LIKE):
        return bytes(data)
    if isinstance(data, str):
        raise TypeError("frames must be bytes-like, not str (encode it first)")
    raise TypeError(f"frames must be bytes-like, not {type(data).__name__}")


def _encoded(text: object, encoding: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(
            f"send_string takes a str, not {type(text).__name__} (send bytes with send)"
        )
    return text.encode(encoding)


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode("utf-8")


@hot_paths(operations=("send", "send_multipart"), cores=("_send_message", "_try_send_message"))
class Sending:
    """The sends of a socket (a base of :class:`trizmq.Socket`; its life is
    ``SocketLife``'s, which sets what is declared here)."""

    socket_type: ClassVar[str]
    _strategy: SocketStrategy
    _fast: FastPath | None
    _cancel_pending: Callable[[], bool] | None
    _run_vars: dict[str, Any]
    _ops: int
    _closing: bool
    _runtime: SocketRuntime | None
    #: entered, open, and the type can send
    _sendable: bool
    #: frames kept with ``send(..., more=True)`` for the message under construction
    _outgoing: list[bytes]
    #: send's one check for its shortest way: sendable, no frames kept
    _send_ready: bool

    if TYPE_CHECKING:

        def _closed_error(self) -> Exception: ...
        async def _yield_turn(self) -> None: ...
        async def _wait_to_send(self) -> None: ...

    # -- the core --------------------------------------------------------------------------
    def _try_send_message(self, msg: list[bytes]) -> bool:
        """Hand ``msg`` (in the strategy's form) to the strategy's route; False where
        the pattern says to wait. On the fast path, a message routed to an idle
        connection may then be written by this task."""
        if not self._sendable:
            self._check_send()
        fast = self._fast
        if fast is not None and fast.write_through_ready:
            sent = fast.route(self._strategy.route, msg)
        else:
            sent = self._strategy.route(msg)
        return sent

    def _send_message_nowait(self, msg: list[bytes]) -> None:
        """:meth:`_try_send_message`, or ``trio.WouldBlock``."""
        if not self._try_send_message(msg):
            raise trio.WouldBlock

    async def _send_message(self, msg: list[bytes]) -> None:
        """Send ``msg`` (in the strategy's form), waiting as the pattern says: every
        awaiting send, on :meth:`_try_send_message`."""
        # the cancellation half of a checkpoint (the probe's test: no coroutine)
        if self._cancel_pending is None:
            await _checkpoint_if_cancelled()
        elif self._cancel_pending():
            await _checkpoint()
        sent = self._try_send_message(msg)
        if not sent:
            await self._send_waiting(msg)
        else:
            ops = self._ops = self._ops + 1
            if ops >= YIELD_EVERY:
                await self._yield_turn()

    async def _send_waiting(self, msg: list[bytes]) -> None:
        """Park until the pattern takes ``msg``, refused for now."""
        while True:
            await self._wait_to_send()
            if self._try_send_message(msg):
                self._ops = 0  # it waited: the count of calls that did not starts again
                return

    def _check_send(self) -> None:
        """Why this socket cannot send now, raised; nothing where it can."""
        if self._closing:
            raise self._closed_error()
        if not self._strategy.can_send:
            raise NotSupportedError(f"a {self.socket_type} socket cannot send")
        if self._runtime is None:
            # nothing could ever complete the call: say so instead of waiting forever
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )

    def _update_send_ready(self) -> None:
        """Let :meth:`send` take its shortest way again if it may: sendable, no frames
        kept."""
        self._send_ready = self._sendable and not self._outgoing

    # -- messages as frames -----------------------------------------------------------------
    def _prepare(self, frames: Iterable[Buffer]) -> list[bytes]:
        """A message given as frames, in the strategy's own form."""
        if frames.__class__ is list and len(frames) == 1:
            # the commonest: one frame of bytes, in a list of its own (copied: the
            # caller may reuse the list, and an inproc receiver may mutate it)
            frame = frames[0]
            if frame.__class__ is bytes:
                return [frame]
        msg = [frame_of(f) for f in frames]
        if not msg:
            raise ValueError("a message needs at least one frame")
        return msg

    def _keep(self, data: Buffer) -> None:
        """Keep a frame sent with ``more=True`` for the message under construction."""
        frame = frame_of(data)
        self._check_send()
        self._outgoing.append(frame)
        self._send_ready = False  # the next frames join this message

    def send_nowait(self, data: Buffer, *, more: bool = False) -> None:
        """Send one frame or raise ``trio.WouldBlock`` (nothing is queued then).

        When it raises, the frames kept earlier with ``more=True`` stay kept, so the
        same call may be tried again. A call with ``more=True`` never waits, so never
        raises ``trio.WouldBlock``.

        Args:
            data: the frame, bytes-like (``bytes``, ``bytearray`` or ``memoryview``;
                the last two are copied).
            more: True to keep the frame for the message under construction, which
                goes out with the first frame sent with ``more=False``.

        Raises:
            trio.WouldBlock: where :meth:`send` would wait.
            TypeError: for a frame that is not bytes-like (a ``str``, say).
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        if more:
            self._keep(data)
            return
        self._send_message_nowait([*self._outgoing, frame_of(data)])
        if self._outgoing:
            self._outgoing = []
            self._update_send_ready()

    async def send(self, data: Buffer, *, more: bool = False) -> None:
        """Send one frame; ``more=True`` continues a multipart message (sent atomically).

        A frame sent with ``more=True`` is kept; the message goes out, whole, with the
        first frame sent with ``more=False``. A cancelled last ``send`` of a message
        sends nothing of it, and the frames kept for it are dropped.

        Args:
            data: the frame, bytes-like (``bytes``, ``bytearray`` or ``memoryview``;
                the last two are copied).
            more: True to keep the frame for the message under construction; False
                (the default) to send the message with this frame as its last.

        Raises:
            TypeError: for a frame that is not bytes-like (a ``str``, say).
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        if self._send_ready and data.__class__ is bytes and not more:
            msg = [data]  # the commonest: one frame, nothing kept
        elif more:
            self._keep(data)
            await _checkpoint_if_cancelled()
            return
        else:
            # the last frame of a message: the frames kept go with it, or are dropped
            # with it if it is cancelled
            msg = [*self._outgoing, frame_of(data)]
            if self._outgoing:
                self._outgoing = []
                self._update_send_ready()
        await self._send_message(msg)

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Send a whole message, or raise ``trio.WouldBlock`` where it would wait.

        Nothing of the message is queued when it raises.

        Args:
            frames: the frames of the message, each bytes-like (``bytes``,
                ``bytearray`` or ``memoryview``; the last two are copied).

        Raises:
            trio.WouldBlock: where :meth:`send_multipart` would wait.
            ValueError: for a message of no frames.
            TypeError: for a frame that is not bytes-like (a ``str``, say).
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        self._send_message_nowait(self._prepare(frames))

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Send a whole message; waits where the pattern says (no peer, or all full).

        The message goes out whole or not at all: a cancelled call sends nothing of
        it. Frames kept with ``send(..., more=True)`` stay kept, for the next ``send``.

        Args:
            frames: the frames of the message, each bytes-like (``bytes``,
                ``bytearray`` or ``memoryview``; the last two are copied).

        Raises:
            ValueError: for a message of no frames.
            TypeError: for a frame that is not bytes-like (a ``str``, say).
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        msg = self._prepare(frames)
        await self._send_message(msg)

    # -- batches ----------------------------------------------------------------------------
    async def send_many(self, messages: Iterable[Iterable[Buffer]]) -> int:
        """Send whole messages in order; return how many were sent.

        Equivalent to awaiting :meth:`send_multipart` for each, but it checks for
        cancellation once, waits only where the pattern says, and yields to the
        scheduler once at the end: the batch form of the fast path. If it is
        cancelled while waiting, the messages before the one that waited were sent
        and that one and the rest were not.

        Args:
            messages: the messages, each an iterable of bytes-like frames.

        Returns:
            The number of messages sent, which is all of those given.

        Raises:
            ValueError: for a message of no frames, after the messages before it were
                sent.
            TypeError: for a frame that is not bytes-like, likewise.
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        await _checkpoint_if_cancelled()
        count = 0
        prepare = self._prepare
        chunk: list[list[bytes]] = []
        for frames in messages:
            try:
                msg = prepare(frames)
            except BaseException:
                # the messages before a bad one are sent, as one by one they would be
                count += await self._route_all(chunk)
                raise
            chunk.append(msg)
            if len(chunk) == SEND_CHUNK:
                count += await self._route_all(chunk)
                chunk = []
        if chunk:
            count += await self._route_all(chunk)
        if self._fast is not None:
            self._fast.waited()
        await trio.lowlevel.cancel_shielded_checkpoint()
        return count

    async def _route_all(self, msgs: list[list[bytes]]) -> int:
        """Route ``msgs`` in order, in batches (the strategy's ``send_batch``), waiting
        where the pattern says; return how many (all, unless cancelled).

        It waits only after a pass that routed nothing: a pass that filled a queue to
        its mark may also have written it through, emptying it before anything could
        wake a parked sender (no writer took from it), so it tries again first."""
        start, end = 0, len(msgs)
        strategy = self._strategy
        while True:
            if not self._sendable:
                self._check_send()
            fast = self._fast
            before = start
            if fast is None or not fast.write_through_ready:
                start = strategy.send_batch(msgs, start)
            else:
                start = fast.route_batch(strategy.send_batch, msgs, start)
            if start == end:
                return end
            if start == before:
                await self._wait_to_send()

    # -- text and JSON (pyzmq's helpers, the same wire form) --------------------------------
    async def send_string(self, text: str, encoding: str = "utf-8", **kwargs: Any) -> None:
        """Send ``text`` as one frame, encoded (UTF-8 by default), as pyzmq's ``send_string``.

        Args:
            text: the text to send; only a ``str``.
            encoding: the codec that encodes it.
            **kwargs: passed to :meth:`send` (``more=``; ``group=`` on a Radio,
                ``routing_id=`` on a Server).

        Raises:
            TypeError: for anything but a ``str``.
            UnicodeEncodeError: for text that ``encoding`` cannot encode (a
                ``ValueError``).
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        await self.send(_encoded(text, encoding), **kwargs)

    def send_string_nowait(self, text: str, encoding: str = "utf-8", **kwargs: Any) -> None:
        """:meth:`send_string`, or ``trio.WouldBlock`` (nothing is queued then).

        Args:
            text: the text to send; only a ``str``.
            encoding: the codec that encodes it.
            **kwargs: passed to :meth:`send_nowait` (``more=``; ``group=`` on a Radio,
                ``routing_id=`` on a Server).

        Raises:
            trio.WouldBlock: where :meth:`send_string` would wait.
            TypeError: for anything but a ``str``.
            UnicodeEncodeError: for text that ``encoding`` cannot encode (a
                ``ValueError``).
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        self.send_nowait(_encoded(text, encoding), **kwargs)

    async def send_json(self, obj: object, **kwargs: Any) -> None:
        """Send ``obj`` as one frame of UTF-8 JSON (``json.dumps``).

        That is what pyzmq's ``send_json`` sends, so either end may be pyzmq.

        Args:
            obj: the object to send: what ``json.dumps`` accepts.
            **kwargs: passed to :meth:`send` (``more=``; ``group=`` on a Radio,
                ``routing_id=`` on a Server).

        Raises:
            TypeError: for an object JSON cannot hold.
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.

        Example::

            async with trizmq.Req(connect="tcp://127.0.0.1:5555") as req:
                await req.send_json({"job": 42})
                reply = await req.recv_json()
        """
        await self.send(_json(obj), **kwargs)

    def send_json_nowait(self, obj: object, **kwargs: Any) -> None:
        """:meth:`send_json`, or ``trio.WouldBlock`` (nothing is queued then).

        Args:
            obj: the object to send: what ``json.dumps`` accepts.
            **kwargs: passed to :meth:`send_nowait` (``more=``; ``group=`` on a Radio,
                ``routing_id=`` on a Server).

        Raises:
            trio.WouldBlock: where :meth:`send_json` would wait.
            TypeError: for an object JSON cannot hold.
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot send (PULL, SUB).
            RuntimeError: before the socket is entered.
        """
        self.send_nowait(_json(obj), **kwargs)

