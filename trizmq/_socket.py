"""The public socket: sending and receiving messages (its life is ``trizmq._lifecycle``'s).

Routing is the socket type's strategy (``trizmq.patterns.sockets``): this module
holds no routing.

Strategy: every operation exists once, as a non-blocking twin that raises
``trio.WouldBlock`` (:meth:`Socket.send_nowait`, :meth:`Socket.recv_nowait`, ...);
the awaiting form is the twin plus a park on ``WouldBlock``, as trio builds
``MemorySendChannel.send`` on ``send_nowait``.

Checkpoints: trio's convention is that every ``await`` is a checkpoint. trizmq's
send and receive keep the *cancellation* half of it on every call, but reschedule
only when they must wait or once every :data:`YIELD_EVERY` calls, because a full
reschedule costs ~12 µs here against ~1 µs for queueing a message. A loop of sends
or receives that never waits therefore still lets other tasks run, and still
notices cancellation at every call. On the fast path
(``trizmq.nursery.fastpath``) the cancellation test is made without a coroutine:
the hot paths test ``self._cancel_pending()``, a check the fast path's trio probe
hands out, and the probe compiles that check into them
(:func:`~trizmq.nursery.fastpath.trio_probe.inline_cancel_checks`), so they cost no
call and this module reads nothing of trio's insides.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import trio

from ._errors import NotSupportedError
from ._lifecycle import SocketLife
from ._message import Message
from .nursery.fastpath.trio_probe import inline_cancel_checks
from .zmtp.encoding import Buffer

__all__ = ["Socket"]

#: a send or receive that did not wait still yields to the scheduler once per this many calls
YIELD_EVERY = 128
#: send_many routes the messages it is given in batches of up to this many
SEND_CHUNK = 256

_BYTES_LIKE = (bytes, bytearray, memoryview)
_checkpoint_if_cancelled = trio.lowlevel.checkpoint_if_cancelled
_checkpoint = trio.lowlevel.checkpoint


def _encoded(text: object, encoding: str) -> bytes:
    if not isinstance(text, str):
        raise TypeError(
            f"send_string takes a str, not {type(text).__name__} (send bytes with send)"
        )
    return text.encode(encoding)


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode("utf-8")


def _frame(data: object) -> bytes:
    if data.__class__ is bytes:
        return data
    if isinstance(data, _BYTES_LIKE):
        # copy: the caller may reuse a bytearray before the writer encodes it
        return bytes(data)
    if isinstance(data, str):
        raise TypeError("frames must be bytes-like, not str (encode it first)")
    raise TypeError(f"frames must be bytes-like, not {type(data).__name__}")


@inline_cancel_checks
class Socket(SocketLife):
    """Base class of every socket type; use a subclass such as :class:`trizmq.Push`.

    ``trizmq.Socket()`` itself makes no socket (``TypeError``). A socket is an async
    context manager, entered once: entering opens the nursery that owns every task
    the socket runs and applies ``bind=`` then ``connect=``; leaving flushes for up to
    ``linger`` seconds and closes it (at once when the body raised or was cancelled).

    Every send and receive has an awaiting form and a ``_nowait`` twin that raises
    ``trio.WouldBlock`` where the awaiting form would wait. Sending on a type that
    cannot send, or receiving on one that cannot receive, raises
    :class:`trizmq.NotSupportedError`; every operation after the close raises
    ``trio.ClosedResourceError``; a send or receive before the socket is entered
    raises ``RuntimeError``, as does one from another ``trio.run`` than the one it
    was entered in, once that run has closed it. ``async for frames in sock`` gives
    whole messages and ends quietly when the socket closes.

    Args:
        **options: keyword options, validated at once (see the options table of
            docs/getting-started.md: ``bind``, ``connect``, ``sndhwm``, ``rcvhwm``,
            ``linger``, ``heartbeat_ivl``, ``security``, ...); an unknown name, or one
            that does not apply to the type, raises ``TypeError``, a bad value
            ``ValueError`` (:class:`trizmq.EndpointError` for a bad endpoint).

    Raises:
        TypeError: for ``Socket()`` itself, an unknown option, or an option that does
            not apply to the socket type.
        ValueError: for a bad option value.
    """

    def __init__(self, **options: object) -> None:
        super().__init__(**options)
        #: True when the subclass shows a message differently from the strategy's form
        self._own_frames = type(self)._frames_of is not Socket._frames_of

    # -- sending ---------------------------------------------------------------------------
    def _check_send(self) -> None:
        if self._closing:
            raise self._closed_error()
        if not self._strategy.can_send:
            raise NotSupportedError(f"a {self.socket_type} socket cannot send")
        if self._runtime is None:
            # nothing could ever complete the call: say so instead of waiting forever
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )

    def _prepare(self, frames: Iterable[Buffer]) -> list[bytes]:
        """A message given as frames, in the strategy's own form."""
        if frames.__class__ is list and len(frames) == 1:
            # the commonest: one frame of bytes, in a list of its own (copied: the
            # caller may reuse the list, and an inproc receiver may mutate it)
            frame = frames[0]
            if frame.__class__ is bytes:
                return [frame]
        msg = [_frame(f) for f in frames]
        if not msg:
            raise ValueError("a message needs at least one frame")
        return msg

    def _route(self, msg: list[bytes]) -> bool:
        """The core of every send: hand one message in the strategy's form to the
        strategy; False where it would block. On the fast path, a message routed to
        an idle connection may then be written by this task (write-through)."""
        if not self._sendable:
            self._check_send()
        fast = self._fast
        if fast is None or not fast.armed:
            return self._strategy.send(msg)
        return fast.route(self._strategy.send, msg)

    def _send_raw_nowait(self, msg: list[bytes]) -> None:
        """Send one message in the strategy's form, or raise ``trio.WouldBlock``."""
        if not self._route(msg):
            raise trio.WouldBlock

    async def _send_raw(self, msg: list[bytes]) -> None:
        """Send one message in the strategy's form, waiting as the pattern says."""
        # the cancellation half of a checkpoint (a call would cost a coroutine)
        if self._cancel_pending is None:
            await _checkpoint_if_cancelled()
        elif self._cancel_pending():
            await _checkpoint()
        if not self._route(msg):
            return await self._send_waiting(msg)
        self._ops += 1
        if self._ops >= YIELD_EVERY:
            await self._yield_turn()
        return None

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
        self._send_raw_nowait(self._prepare(frames))

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Send a whole message; waits where the pattern says (no peer, or all full).

        The message goes out whole or not at all: a cancelled call sends nothing of it.

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
        if self._lean_send:
            # send's lean path, for a whole message (see send)
            if self._cancel_pending():  # type: ignore[misc]
                await _checkpoint()
            fast = self._fast
            if fast is not None and fast.armed:
                sent = fast.route(self._strategy.send, msg)
            else:
                sent = self._strategy.send(msg)
            if not sent:
                return await self._send_waiting(msg)
            ops = self._ops = self._ops + 1
            if ops >= YIELD_EVERY:
                await self._yield_turn()
            return None
        await self._send_raw(msg)

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
        frame = _frame(data)
        if more:
            self._check_send()
            self._outgoing.append(frame)
            self._lean_send = False  # the next frames join this message
            return
        self._send_raw_nowait([*self._outgoing, frame])
        if self._outgoing:
            self._outgoing = []
            self._relean_send()

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
        if self._lean_send and data.__class__ is bytes and not more:
            # entered, open, on the fast path, no frames kept with more=True: the
            # hottest path there is, so the checkpoint and _route are inlined
            if self._cancel_pending():  # type: ignore[misc]
                await _checkpoint()
            msg = [data]
            fast = self._fast
            if fast is not None and fast.armed:
                sent = fast.route(self._strategy.send, msg)
            else:
                sent = self._strategy.send(msg)
            if not sent:
                return await self._send_waiting(msg)
            ops = self._ops = self._ops + 1
            if ops >= YIELD_EVERY:
                await self._yield_turn()
            return None
        return await self._send_slow(data, more)

    async def _send_slow(self, data: Buffer, more: bool) -> None:
        """:meth:`send` off its lean path: a frame to copy, a frame kept or the last of
        a multipart message, the portable path's checkpoint, or the error of a socket
        that cannot send."""
        frame = data if data.__class__ is bytes else _frame(data)
        if more:
            self._check_send()
            self._outgoing.append(frame)
            self._lean_send = False  # the next frames join this message
            await _checkpoint_if_cancelled()
            return
        if self._outgoing:
            msg, self._outgoing = [*self._outgoing, frame], []
            self._relean_send()
        else:
            msg = [frame]
        await self._send_raw(msg)

    async def _send_waiting(self, msg: list[bytes]) -> None:
        """:meth:`send` once checkpointed, with ``msg`` refused for now: wait until the
        pattern takes it."""
        while True:
            await self._wait_to_send()
            if self._route(msg):
                break
        self._ops = 0  # it waited: the count of calls that did not starts again

    def _relean_send(self) -> None:
        """Let :meth:`send` take its lean path again if it may: the socket entered and
        open, the fast path's inlined checkpoint in use, no frames kept."""
        self._lean_send = self._sendable and self._cancel_pending is not None and not self._outgoing

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
        where the pattern says; return how many (all, unless cancelled)."""
        start, end = 0, len(msgs)
        strategy = self._strategy
        while True:
            if not self._sendable:
                self._check_send()
            fast = self._fast
            if fast is None or not fast.armed:
                start = strategy.send_batch(msgs, start)
            else:
                start = fast.route_batch(strategy.send_batch, msgs, start)
            if start == end:
                return end
            await self._wait_to_send()

    # -- receiving -------------------------------------------------------------------------
    def _check_recv(self) -> None:
        if self._closing:
            raise self._closed_error()
        if not self._strategy.can_recv:
            raise NotSupportedError(f"a {self.socket_type} socket cannot receive")
        if self._runtime is None:
            # nothing could ever complete the call: say so instead of waiting forever
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )

    def _take(self) -> list[bytes] | None:
        """The core of every receive: the next message in the strategy's own form
        (routing id or group first), or None where it would block."""
        if not self._recvable:
            self._check_recv()
        return self._strategy.recv()

    def _recv_raw_nowait(self) -> list[bytes]:
        """The next message in the strategy's own form, or ``trio.WouldBlock``."""
        msg = self._take()
        if msg is None:
            raise trio.WouldBlock
        return msg

    async def _recv_raw(self) -> list[bytes]:
        """The next message in the strategy's own form, waiting for one."""
        if self._cancel_pending is None:
            await _checkpoint_if_cancelled()
        elif self._cancel_pending():
            await _checkpoint()
        msg = self._take()
        if msg is None:
            return await self._recv_raw_waiting()
        self._ops += 1
        if self._ops >= YIELD_EVERY:
            await self._yield_turn()
        return msg

    async def _recv_raw_waiting(self) -> list[bytes]:
        """:meth:`_recv_raw` once checkpointed, with nothing queued: wait for a message."""
        while True:
            await self._wait_to_recv()
            msg = self._take()
            if msg is not None:
                break
        self._ops = 0  # it waited: the count of calls that did not starts again
        return msg

    def _frames_of(self, raw: list[bytes]) -> list[bytes]:
        """The frames the application sees of a strategy's message."""
        return raw

    def _message_of(self, raw: list[bytes]) -> Message:
        """The :class:`Message` of a strategy's message."""
        return Message(raw)

    def recv_multipart_nowait(self) -> list[bytes]:
        """Receive a whole message or raise ``trio.WouldBlock``.

        Returns:
            The frames of the message (the rest of one, if :meth:`recv` started it).

        Raises:
            trio.WouldBlock: where :meth:`recv_multipart` would wait.
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        if self._incoming:
            rest = list(self._incoming)
            self._incoming.clear()
            self._relean()
            return rest
        return self._frames_of(self._recv_raw_nowait())

    async def recv_multipart(self) -> list[bytes]:
        """Receive a whole message (the rest of one, if :meth:`recv` started it).

        Returns:
            The frames of the message, as a list of ``bytes``.

        Raises:
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        if self._lean_recv:
            # recv's lean path, for a whole message (see recv)
            if self._cancel_pending():  # type: ignore[misc]
                await _checkpoint()
            msg = self._strategy.recv()
            if msg is None:
                msg = await self._recv_raw_waiting()
            else:
                ops = self._ops = self._ops + 1
                if ops >= YIELD_EVERY:
                    await self._yield_turn()
            return self._frames_of(msg) if self._own_frames else msg
        if self._incoming:
            await trio.lowlevel.checkpoint()
            return self.recv_multipart_nowait()
        return self._frames_of(await self._recv_raw())

    def recv_nowait(self) -> bytes:
        """Receive one frame or raise ``trio.WouldBlock``.

        Returns:
            The next frame; :attr:`rcvmore` tells whether the message goes on.

        Raises:
            trio.WouldBlock: where :meth:`recv` would wait.
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        if self._incoming:
            frame = self._incoming.popleft()
            if not self._incoming:
                self._relean()
            return frame
        msg = self.recv_multipart_nowait()
        if len(msg) > 1:
            self._incoming.extend(msg[1:])
            self._lean_recv = False  # the next calls take the rest of this message first
        return msg[0]

    async def recv(self) -> bytes:
        """Receive one frame; :attr:`rcvmore` tells whether the message goes on.

        Returns:
            The next frame, the first of a new message or the next of the message
            being read.

        Raises:
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        if self._lean_recv:
            # entered, open, on the fast path, no message part-read: the hottest path
            # there is, so _recv_raw's checkpoint is inlined and the rest is elsewhere
            if self._cancel_pending():  # type: ignore[misc]
                await _checkpoint()
            msg = self._strategy.recv_item()
            if msg is None:
                return self._first_frame(await self._recv_raw_waiting())
            ops = self._ops = self._ops + 1
            if ops >= YIELD_EVERY:
                await self._yield_turn()
            if msg.__class__ is bytes:  # a one-frame message, queued bare
                return msg
            return self._first_frame(msg)
        return await self._recv_slow()

    async def _recv_slow(self) -> bytes:
        """:meth:`recv` off its lean path: the next frame of a message part-read, the
        portable path's checkpoint, or the error of a socket that cannot receive."""
        if self._incoming:
            await trio.lowlevel.checkpoint()
            if not self._incoming:  # closed meanwhile, by another task
                self._check_recv()
            frame = self._incoming.popleft()
            if not self._incoming:
                self._relean()
            return frame
        return self._first_frame(await self._recv_raw())

    def _first_frame(self, msg: list[bytes] | bytes) -> bytes:
        """The first frame of a message taken by :meth:`recv`; the others are kept for
        the next calls."""
        if isinstance(msg, bytes):  # a one-frame message, queued bare
            return msg
        if self._own_frames:
            msg = self._frames_of(msg)
        if len(msg) == 1:
            return msg[0]
        self._incoming.extend(msg)
        self._lean_recv = False  # the next calls take the rest of this message first
        return self._incoming.popleft()

    def _relean(self) -> None:
        """Let :meth:`recv` take its lean path again if it may: the socket entered and
        open, the fast path's inlined checkpoint in use, no message part-read."""
        self._lean_recv = self._recvable and self._cancel_pending is not None and not self._incoming

    async def recv_many(self, max_messages: int = 1024) -> list[list[bytes]]:
        """Wait for one whole message, then take up to ``max_messages`` already queued.

        The batch form of :meth:`recv_multipart`: one wake-up for many messages.

        Args:
            max_messages: the most messages to return, an ``int`` of at least 1.

        Returns:
            The messages, each a list of frames, in the order received; at least one
            and at most ``max_messages``.

        Raises:
            TypeError: if ``max_messages`` is not an ``int``.
            ValueError: if ``max_messages`` is below 1.
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        if isinstance(max_messages, bool) or not isinstance(max_messages, int):
            raise TypeError(f"max_messages must be an int, not {max_messages!r}")
        if max_messages < 1:
            raise ValueError(f"max_messages must be >= 1, not {max_messages!r}")
        batch = [await self.recv_multipart()]
        if max_messages > 1 and not self._closing:
            if self._own_frames:
                raw: list[list[bytes]] = []
                self._strategy.recv_into(raw, max_messages - 1)
                batch += map(self._frames_of, raw)
            else:
                self._strategy.recv_into(batch, max_messages)
        return batch

    @property
    def rcvmore(self) -> bool:
        """True while frames of the message being read with :meth:`recv` remain."""
        return bool(self._incoming)

    async def recv_message(self) -> Message:
        """Receive a whole message with its metadata (group, routing id).

        Returns:
            The message as a :class:`trizmq.Message`, its frames with ``group`` set
            on a DISH and ``routing_id`` on a SERVER or PEER (None otherwise). The
            rest of a message that :meth:`recv` started comes without metadata.

        Raises:
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        if self._incoming:
            return Message(await self.recv_multipart())
        return self._message_of(await self._recv_raw())

    # -- text and JSON (pyzmq's helpers, the same wire form) ------------------------------
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

    async def recv_string(self, encoding: str = "utf-8") -> str:
        """Receive one frame and decode it (UTF-8 by default), as pyzmq's ``recv_string``.

        Args:
            encoding: the codec that decodes the frame.

        Returns:
            The decoded text.

        Raises:
            UnicodeDecodeError: for bytes that are not in ``encoding`` (a
                ``ValueError``); the frame is consumed all the same.
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        return (await self.recv()).decode(encoding)

    def recv_string_nowait(self, encoding: str = "utf-8") -> str:
        """:meth:`recv_string`, or ``trio.WouldBlock``.

        Args:
            encoding: the codec that decodes the frame.

        Returns:
            The decoded text.

        Raises:
            trio.WouldBlock: where :meth:`recv_string` would wait.
            UnicodeDecodeError: for bytes that are not in ``encoding`` (a
                ``ValueError``); the frame is consumed all the same.
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        return self.recv_nowait().decode(encoding)

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

    async def recv_json(self) -> Any:
        """Receive one frame of JSON and return the object (``json.loads``).

        Returns:
            The decoded object.

        Raises:
            ValueError: for a frame that is not JSON (``json.JSONDecodeError``); the
                frame is consumed all the same.
            trio.ClosedResourceError: once the socket is closed (also for a call waiting).
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        return json.loads(await self.recv())

    def recv_json_nowait(self) -> Any:
        """:meth:`recv_json`, or ``trio.WouldBlock``.

        Returns:
            The decoded object.

        Raises:
            trio.WouldBlock: where :meth:`recv_json` would wait.
            ValueError: for a frame that is not JSON (``json.JSONDecodeError``); the
                frame is consumed all the same.
            trio.ClosedResourceError: once the socket is closed.
            trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).
            RuntimeError: before the socket is entered.
        """
        return json.loads(self.recv_nowait())

    def __aiter__(self) -> Socket:
        return self

    async def __anext__(self) -> list[bytes]:
        try:
            return await self.recv_multipart()
        except trio.ClosedResourceError:
            raise StopAsyncIteration from None

    def statistics(self) -> dict[str, Any]:
        """Peers, endpoints and queue lengths, for diagnostics: the older, untyped dict
        (``stats()`` is the typed snapshot of every counter).

        ``queued_out`` and ``queued_in`` count the messages waiting in this socket's
        peer queues (outgoing: not yet written; incoming: not yet read);
        ``receivers_waiting`` and ``senders_waiting`` the tasks (and threads) parked
        in a receive or a send.

        Returns:
            A new ``dict`` of counters and lists, by name. Always ``peers``,
            ``receivers_waiting`` and ``senders_waiting``; once the socket is entered,
            ``bound``, ``connected``, ``live_peers``, ``queued_out`` and ``queued_in``;
            and the type's own (``dropped`` and ``subscriptions`` on a PUB, the
            datagram counters of a RADIO or DISH, ...).
        """
        stats: dict[str, Any] = dict(self._strategy.statistics())
        fast = self._fast
        reading = fast.reading if fast is not None else None
        stats["receivers_waiting"] = len(self._recv_lot) + (
            reading is not None and reading.waiting is not None
        )
        stats["senders_waiting"] = len(self._send_lot)
        runtime = self._runtime
        if runtime is not None:
            stats.update(runtime.statistics())
            if self._type.udp:  # a type that may go over udp: its datagram counters
                stats["datagrams_malformed"] = runtime.counters["datagrams_malformed"]
                stats["datagrams_dropped"] = runtime.counters["datagrams_dropped"]
        return stats
