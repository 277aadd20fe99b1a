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
(``trizmq.nursery.fastpath``) the cancellation test is made without a coroutine.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import trio

from ._errors import NotSupportedError
from ._lifecycle import SocketLife
from ._message import Message
from .nursery.fastpath import RUN_CONTEXT as _RUN_CONTEXT
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


class Socket(SocketLife):
    """Base class of every socket type; use a subclass such as :class:`trizmq.Push`."""

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
        else:
            task = _RUN_CONTEXT.task
            if task._cancel_status.effectively_cancelled or (
                task is task._runner.main_task and task._runner.ki_pending
            ):
                await _checkpoint()
            task._cancel_points += 1
        while not self._route(msg):
            await self._wait_to_send()
        self._ops += 1
        if self._ops >= YIELD_EVERY:
            await self._yield_turn()

    def send_multipart_nowait(self, frames: Iterable[Buffer]) -> None:
        """Send a whole message or raise ``trio.WouldBlock``."""
        self._send_raw_nowait(self._prepare(frames))

    async def send_multipart(self, frames: Iterable[Buffer]) -> None:
        """Send a whole message; waits where the pattern says (no peer, or all full)."""
        await self._send_raw(self._prepare(frames))

    def send_nowait(self, data: Buffer, *, more: bool = False) -> None:
        """Send one frame or raise ``trio.WouldBlock`` (nothing is queued then)."""
        frame = _frame(data)
        if more:
            self._check_send()
            self._outgoing.append(frame)
            return
        self._send_raw_nowait([*self._outgoing, frame])
        self._outgoing = []

    async def send(self, data: Buffer, *, more: bool = False) -> None:
        """Send one frame; ``more=True`` continues a multipart message (sent atomically)."""
        frame = data if data.__class__ is bytes else _frame(data)
        if more:
            self._check_send()
            self._outgoing.append(frame)
            await _checkpoint_if_cancelled()
            return
        if self._outgoing:
            msg, self._outgoing = [*self._outgoing, frame], []
        else:
            msg = [frame]
        # _send_raw and _route inlined: the single-frame send is the hottest path there is
        if self._cancel_pending is None:
            await _checkpoint_if_cancelled()
        else:
            task = _RUN_CONTEXT.task
            if task._cancel_status.effectively_cancelled or (
                task is task._runner.main_task and task._runner.ki_pending
            ):
                await _checkpoint()
            task._cancel_points += 1
        strategy, fast = self._strategy, self._fast
        while True:
            # _route, inlined
            if not self._sendable:
                self._check_send()
            if fast is None or not fast.armed:
                if strategy.send(msg):
                    break
            elif fast.route(strategy.send, msg):
                break
            await self._wait_to_send()
        self._ops += 1
        if self._ops >= YIELD_EVERY:
            await self._yield_turn()

    async def send_many(self, messages: Iterable[Iterable[Buffer]]) -> int:
        """Send whole messages in order; return how many were sent.

        Equivalent to awaiting :meth:`send_multipart` for each, but it checks for
        cancellation once, waits only where the pattern says, and yields to the
        scheduler once at the end: the batch form of the fast path. If it is
        cancelled while waiting, the messages before the one that waited were sent
        and that one and the rest were not.
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
        else:
            task = _RUN_CONTEXT.task
            if task._cancel_status.effectively_cancelled or (
                task is task._runner.main_task and task._runner.ki_pending
            ):
                await _checkpoint()
            task._cancel_points += 1
        while (msg := self._take()) is None:
            await self._wait_to_recv()
        self._ops += 1
        if self._ops >= YIELD_EVERY:
            await self._yield_turn()
        return msg

    def _frames_of(self, raw: list[bytes]) -> list[bytes]:
        """The frames the application sees of a strategy's message."""
        return raw

    def _message_of(self, raw: list[bytes]) -> Message:
        """The :class:`Message` of a strategy's message."""
        return Message(raw)

    def recv_multipart_nowait(self) -> list[bytes]:
        """Receive a whole message or raise ``trio.WouldBlock``."""
        if self._incoming:
            rest = list(self._incoming)
            self._incoming.clear()
            return rest
        return self._frames_of(self._recv_raw_nowait())

    async def recv_multipart(self) -> list[bytes]:
        """Receive a whole message (the rest of one, if :meth:`recv` started it)."""
        if self._incoming:
            await trio.lowlevel.checkpoint()
            return self.recv_multipart_nowait()
        return self._frames_of(await self._recv_raw())

    def recv_nowait(self) -> bytes:
        """Receive one frame or raise ``trio.WouldBlock``."""
        if self._incoming:
            return self._incoming.popleft()
        msg = self.recv_multipart_nowait()
        if len(msg) > 1:
            self._incoming.extend(msg[1:])
        return msg[0]

    async def recv(self) -> bytes:
        """Receive one frame; :attr:`rcvmore` tells whether the message goes on."""
        if self._incoming:
            await trio.lowlevel.checkpoint()
        else:
            # _recv_raw, inlined: the single-frame receive is the hottest path there is
            if self._cancel_pending is None:
                await _checkpoint_if_cancelled()
            else:
                task = _RUN_CONTEXT.task
                if task._cancel_status.effectively_cancelled or (
                    task is task._runner.main_task and task._runner.ki_pending
                ):
                    await _checkpoint()
                task._cancel_points += 1
            while True:
                if not self._recvable:
                    self._check_recv()
                msg = self._strategy.recv()
                if msg is not None:
                    break
                await self._wait_to_recv()
            self._ops += 1
            if self._ops >= YIELD_EVERY:
                await self._yield_turn()
            if self._own_frames:
                msg = self._frames_of(msg)
            if len(msg) == 1:
                return msg[0]
            self._incoming.extend(msg)
        return self._incoming.popleft()

    async def recv_many(self, max_messages: int = 1024) -> list[list[bytes]]:
        """Wait for one whole message, then take up to ``max_messages`` already queued.

        The batch form of :meth:`recv_multipart`: one wake-up for many messages.
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
        """Receive a whole message with its metadata (group, routing id)."""
        if self._incoming:
            return Message(await self.recv_multipart())
        return self._message_of(await self._recv_raw())

    # -- text and JSON (pyzmq's helpers, the same wire form) ------------------------------
    async def send_string(self, text: str, encoding: str = "utf-8", **kwargs: Any) -> None:
        """Send ``text`` as one frame, encoded (UTF-8 by default), as pyzmq's
        ``send_string``; ``kwargs`` go to :meth:`send` (``group=`` on a Radio,
        ``routing_id=`` on a Server). ``TypeError`` for anything but a ``str``."""
        await self.send(_encoded(text, encoding), **kwargs)

    def send_string_nowait(self, text: str, encoding: str = "utf-8", **kwargs: Any) -> None:
        """:meth:`send_string`, or ``trio.WouldBlock`` (nothing is queued then)."""
        self.send_nowait(_encoded(text, encoding), **kwargs)

    async def recv_string(self, encoding: str = "utf-8") -> str:
        """Receive one frame and decode it (UTF-8 by default); ``UnicodeDecodeError``
        (a ``ValueError``) for bytes that are not in ``encoding``, the frame consumed."""
        return (await self.recv()).decode(encoding)

    def recv_string_nowait(self, encoding: str = "utf-8") -> str:
        """:meth:`recv_string`, or ``trio.WouldBlock``."""
        return self.recv_nowait().decode(encoding)

    async def send_json(self, obj: object, **kwargs: Any) -> None:
        """Send ``obj`` as one frame of UTF-8 JSON (``json.dumps``), what pyzmq's
        ``send_json`` sends, so either end may be pyzmq; ``kwargs`` go to
        :meth:`send`. ``TypeError`` for an object JSON cannot hold."""
        await self.send(_json(obj), **kwargs)

    def send_json_nowait(self, obj: object, **kwargs: Any) -> None:
        """:meth:`send_json`, or ``trio.WouldBlock``."""
        self.send_nowait(_json(obj), **kwargs)

    async def recv_json(self) -> Any:
        """Receive one frame of JSON and return the object (``json.loads``);
        ``ValueError`` (``json.JSONDecodeError``) for a frame that is not JSON."""
        return json.loads(await self.recv())

    def recv_json_nowait(self) -> Any:
        """:meth:`recv_json`, or ``trio.WouldBlock``."""
        return json.loads(self.recv_nowait())

    def __aiter__(self) -> Socket:
        return self

    async def __anext__(self) -> list[bytes]:
        try:
            return await self.recv_multipart()
        except trio.ClosedResourceError:
            raise StopAsyncIteration from None

    def statistics(self) -> dict[str, Any]:
        """Peers, endpoints and queue lengths, for diagnostics.

        ``queued_out`` and ``queued_in`` count the messages waiting in this socket's
        peer queues (outgoing: not yet written; incoming: not yet read);
        ``receivers_waiting`` and ``senders_waiting`` the tasks (and threads) parked
        in a receive or a send.
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
            if self.socket_type in ("RADIO", "DISH"):
                stats["datagrams_malformed"] = runtime.counters["datagrams_malformed"]
                stats["datagrams_dropped"] = runtime.counters["datagrams_dropped"]
        return stats
