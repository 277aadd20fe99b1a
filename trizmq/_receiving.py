"""Receiving: every receive of a socket, each written once on one core.

The core is :meth:`Receiving._try_recv_item`: the strategy's next message
(``take_item``: its fair-queued receive, or a shortcut that does what it would,
such as its one peer's pipe's ``poll_item``), a one-frame message possibly as its
``bytes`` (see ``Connection.bare_messages``); None where there is none. Every public
``*_nowait`` form is that core (``trio.WouldBlock`` on None) and the message's shape
for the application; every awaiting form is :meth:`Receiving._recv_item`, trio's
shape: the cancellation half of a checkpoint, the core, a park where there is
nothing (on the fast path, a wait that may read the only peer's connection
meanwhile), and a turn (see ``trizmq._sending`` for the checkpoints, and why the
core answers None rather than raising). On the fast path ``recv`` and
``recv_multipart`` run compiled with their core and the probe's test inlined
(``trizmq.nursery.fastpath.hot_paths``).

A message of several frames read with :meth:`~Receiving.recv` leaves its other
frames for the next calls (``rcvmore``), and until they are taken no receive takes
a new message.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar

import trio

from ._docparts import shares_doc
from ._errors import NotSupportedError
from ._message import Message
from ._sending import YIELD_EVERY
from .nursery.fastpath.hot_paths import hot_paths

if TYPE_CHECKING:
    from .nursery.runtime import SocketRuntime
    from .patterns.sockets import SocketStrategy

__all__ = ["Receiving"]

_checkpoint_if_cancelled = trio.lowlevel.checkpoint_if_cancelled
_checkpoint = trio.lowlevel.checkpoint


@hot_paths(operations=("recv", "recv_multipart"), cores=("_recv_item", "_try_recv_item"))
@shares_doc
class Receiving:
    """The receives of a socket (a base of :class:`trizmq.Socket`; its life is
    ``SocketLife``'s, which sets what is declared here)."""

    socket_type: ClassVar[str]
    _strategy: SocketStrategy
    _cancel_pending: Callable[[], bool] | None
    _run_vars: dict[str, Any]
    _ops: int
    _closing: bool
    _runtime: SocketRuntime | None
    #: entered, open, and the type can receive
    _recvable: bool
    #: the frames of a message read with recv() that are still to be taken
    _incoming: deque[bytes]
    #: recv's one check for its shortest way: receivable, no message part-read
    _recv_ready: bool
    #: how a receiving task parks until a message may be there (on the fast path, a
    #: wait that may read the only peer's connection meanwhile)
    _wait_to_recv: Callable[[], Awaitable[None]]
    #: True when the class shows a message differently from the strategy's form
    _own_frames: bool

    if TYPE_CHECKING:

        def _closed_error(self) -> Exception: ...
        async def _yield_turn(self) -> None: ...

    # -- the core --------------------------------------------------------------------------
    def _try_recv_item(self) -> list[bytes] | bytes | None:
        """The next message in the strategy's own form (routing id or group first), a
        one-frame message possibly as its ``bytes``; None where there is none."""
        if not self._recvable:
            self._check_recv()
        item = self._strategy.take_item()
        return item

    def _recv_item_nowait(self) -> list[bytes] | bytes:
        """:meth:`_try_recv_item`, or ``trio.WouldBlock``."""
        item = self._try_recv_item()
        if item is None:
            raise trio.WouldBlock
        return item

    async def _recv_item(self) -> list[bytes] | bytes:
        """The next message as :meth:`_try_recv_item` gives it, waiting for one: every
        awaiting receive, on that core."""
        # the cancellation half of a checkpoint (the probe's test: no coroutine)
        if self._cancel_pending is None:
            await _checkpoint_if_cancelled()
        elif self._cancel_pending():
            await _checkpoint()
        item = self._try_recv_item()
        if item is None:
            # park until a message is there, and take it: written here, not called,
            # so that the generated hot paths inline the park as well (a round trip
            # parks at each receive, and a coroutine call there cost REQ/REP 1 % of
            # its instructions)
            while item is None:
                await self._wait_to_recv()
                item = self._try_recv_item()
            self._ops = 0  # it waited: the count of calls that did not starts again
        else:
            ops = self._ops = self._ops + 1
            if ops >= YIELD_EVERY:
                await self._yield_turn()
        return item

    async def _recv_raw(self) -> list[bytes]:
        """The next message in the strategy's own form, as a list, waiting for one."""
        item = await self._recv_item()
        return [item] if isinstance(item, bytes) else item

    def _check_recv(self) -> None:
        """Why this socket cannot receive now, raised; nothing where it can."""
        if self._closing:
            raise self._closed_error()
        if not self._strategy.can_recv:
            raise NotSupportedError(f"a {self.socket_type} socket cannot receive")
        if self._runtime is None:
            # nothing could ever complete the call: say so instead of waiting forever
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )

    def _update_recv_ready(self) -> None:
        """Let :meth:`recv` take its shortest way again if it may: receivable, no
        message part-read."""
        self._recv_ready = self._recvable and not self._incoming

    # -- what the application sees of a message ---------------------------------------------
    def _frames_of(self, raw: list[bytes]) -> list[bytes]:
        """The frames the application sees of a strategy's message."""
        return raw

    def _message_of(self, raw: list[bytes]) -> Message:
        """The :class:`Message` of a strategy's message."""
        return Message(raw)

    def _first_frame(self, msg: list[bytes] | bytes) -> bytes:
        """The first frame of a message taken by :meth:`recv`; the others are kept for
        the next calls."""
        if msg.__class__ is bytes:  # a one-frame message, queued bare
            return msg
        if self._own_frames:
            msg = self._frames_of(msg)  # type: ignore[arg-type]
        if len(msg) == 1:
            return msg[0]  # type: ignore[return-value]
        self._incoming.extend(msg)  # type: ignore[arg-type]
        self._recv_ready = False  # the next calls take the rest of this message first
        return self._incoming.popleft()

    def _next_incoming(self) -> bytes:
        """The next frame of the message part-read."""
        frame = self._incoming.popleft()
        if not self._incoming:
            self._update_recv_ready()
        return frame

    def _whole(self, item: list[bytes] | bytes) -> list[bytes]:
        """A message taken, as the application sees it whole."""
        msg = [item] if isinstance(item, bytes) else item
        return self._frames_of(msg) if self._own_frames else msg

    # -- the receives ----------------------------------------------------------------------
    def recv_nowait(self) -> bytes:
        """Receive one frame or raise ``trio.WouldBlock``.

        Returns:
            The next frame; :attr:`rcvmore` tells whether the message goes on.

        Raises:
            trio.WouldBlock: where :meth:`recv` would wait.
            {recv_state_errors}
        """
        if self._incoming:
            return self._next_incoming()
        return self._first_frame(self._recv_item_nowait())

    async def recv(self) -> bytes:
        """Receive one frame; :attr:`rcvmore` tells whether the message goes on.

        Returns:
            The next frame, the first of a new message or the next of the message
            being read.

        Raises:
            {recv_wait_errors}
        """
        if self._recv_ready:
            item = await self._recv_item()
            if item.__class__ is bytes:  # a one-frame message, queued bare
                return item
            return self._first_frame(item)
        if self._incoming:
            await _checkpoint()
            if not self._incoming:  # closed meanwhile, by another task
                self._check_recv()
            return self._next_incoming()
        return self._first_frame(await self._recv_item())

    def recv_multipart_nowait(self) -> list[bytes]:
        """Receive a whole message or raise ``trio.WouldBlock``.

        Returns:
            The frames of the message (the rest of one, if :meth:`recv` started it).

        Raises:
            trio.WouldBlock: where :meth:`recv_multipart` would wait.
            {recv_state_errors}
        """
        if self._incoming:
            rest = list(self._incoming)
            self._incoming.clear()
            self._update_recv_ready()
            return rest
        return self._whole(self._recv_item_nowait())

    async def recv_multipart(self) -> list[bytes]:
        """Receive a whole message (the rest of one, if :meth:`recv` started it).

        Returns:
            The frames of the message, as a list of ``bytes``.

        Raises:
            {recv_wait_errors}
        """
        if self._recv_ready:
            item = await self._recv_item()
            msg = [item] if item.__class__ is bytes else item
            return self._frames_of(msg) if self._own_frames else msg  # type: ignore[arg-type,return-value]
        if self._incoming:
            await _checkpoint()
            return self.recv_multipart_nowait()
        return self._whole(await self._recv_item())

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
            {recv_wait_errors}
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
            {recv_wait_errors}
        """
        if self._incoming:
            return Message(await self.recv_multipart())
        return self._message_of(await self._recv_raw())

    def __aiter__(self) -> Receiving:
        return self

    async def __anext__(self) -> list[bytes]:
        try:
            return await self.recv_multipart()
        except trio.ClosedResourceError:
            raise StopAsyncIteration from None

    # -- text and JSON (pyzmq's helpers, the same wire form) --------------------------------
    async def recv_string(self, encoding: str = "utf-8") -> str:
        """Receive one frame and decode it (UTF-8 by default), as pyzmq's ``recv_string``.

        Args:
            encoding: the codec that decodes the frame.

        Returns:
            The decoded text.

        Raises:
            UnicodeDecodeError: for bytes that are not in ``encoding`` (a
                ``ValueError``); the frame is consumed all the same.
            {recv_wait_errors}
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

    async def recv_json(self) -> Any:
        """Receive one frame of JSON and return the object (``json.loads``).

        Returns:
            The decoded object.

        Raises:
            ValueError: for a frame that is not JSON (``json.JSONDecodeError``); the
                frame is consumed all the same.
            {recv_wait_errors}
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
