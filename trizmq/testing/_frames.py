"""Following the ZMTP frames of one direction of a virtual link, to drop whole messages.

The virtual network carries bytes; a fault that drops *messages* needs to know where
each one starts and ends. A :class:`FrameWalker` watches the bytes one side sends,
as they are sent, and splits them into pieces it keeps (each marked as part of the
handshake or not) and pieces it drops. It never holds bytes back: the flags byte of
a frame says all there is to decide (command or message frame, MORE or last), so
every byte is passed on or dropped the moment it is sent.

Rules:

* The first 64 bytes are the greeting (37/ZMTP §Greeting). If they are not a ZMTP 3
  greeting (first byte ``FF``, bit 0 of byte 9, major version 3 or more), the walker
  gives up: everything after is passed on as it is, nothing is ever dropped.
* Then frames: ``flags | size (1 or 8 bytes) | body``. A flags byte that no valid
  frame starts with also makes the walker give up.
* The handshake ends, in this direction, with the frame of the command READY (NULL,
  and the server side of PLAIN and CURVE), INITIATE (the client side of PLAIN and
  CURVE) or ERROR. Every byte up to the end of that frame is *handshake*.
* After the handshake, a *message* is a run of message frames (no COMMAND bit) up to
  the first without MORE. Whether it is dropped is decided once, at its first frame,
  by asking ``take_drop()``; its later frames follow that decision. Command frames
  (PING, PONG, SUBSCRIBE, CANCEL, ...) are never dropped, even between the frames of
  a message.
* Only NULL and PLAIN carry messages as plain frames. Under CURVE every frame after
  the handshake travels as an encrypted MESSAGE (heartbeats included, MORE hidden in
  the ciphertext, and the peer refuses a gap in the nonces), so the walker drops
  nothing there and never asks ``take_drop()``.

No state grows with the traffic: a frame body is counted, never stored; at most the
greeting (64 bytes), a frame header (9) and a command name (9) are kept.
"""

from __future__ import annotations

from collections.abc import Callable

from ..zmtp.commands import ERROR, INITIATE, READY
from ..zmtp.frames import COMMAND, HEADER_SIZE, LONG, MORE
from ..zmtp.greeting import GREETING_SIZE

__all__ = ["FrameWalker"]

#: commands that end the handshake in the direction that sends them
_HANDSHAKE_ENDS = frozenset({READY, INITIATE, ERROR})
#: a command body starts with its name's length, then the name
_NAME_PREFIX = 1 + max(len(name) for name in _HANDSHAKE_ENDS)
#: mechanisms whose messages travel as plain frames, so they can be found and dropped
_PLAIN_FRAMES = frozenset({b"NULL", b"PLAIN"})


class FrameWalker:
    """Splits one direction's bytes into kept and dropped pieces; see the module docstring.

    ``take_drop()`` is asked at the first frame of every message after the handshake
    and answers whether that whole message is to be dropped. ``may_drop()`` is asked
    once per :meth:`feed`: while it is False, whole frames are skipped in a tight loop
    (nothing can be dropped, only the boundaries need following).
    """

    def __init__(
        self, take_drop: Callable[[], bool], may_drop: Callable[[], bool] = lambda: True
    ) -> None:
        self._take_drop = take_drop
        self._may_drop = may_drop
        self._greeting = bytearray()
        #: False once there is nothing left to find: not ZMTP 3, or the handshake is
        #: over and the mechanism hides its messages (CURVE); bytes then pass as they are
        self.walking = True
        #: this direction has sent the last command of its handshake
        self.handshake_done = False
        #: messages travel as plain frames (NULL, PLAIN), so they can be dropped
        self._droppable = False
        self._header = bytearray()
        self._header_size = 0
        self._body_left = 0
        self._in_body = False
        self._command = False
        self._name = bytearray()
        #: dropping the current frame / the message the current frame belongs to
        self._dropping = False
        self._drop_message = False
        self._in_message = False

    def feed(self, data: bytes) -> list[tuple[bytes, bool]]:
        """Pass ``data`` (bytes just sent) through.

        Returns the kept pieces in order, each with its ``handshake`` flag (True for
        bytes of the greeting and the handshake); dropped bytes are left out.
        """
        if self.walking and self.handshake_done and not self._droppable:
            self.walking = False
        if not self.walking:
            return [(data, False)] if data else []
        # kept spans of data: (start, end, handshake); contiguous equal ones are merged
        spans: list[tuple[int, int, bool]] = []
        i, n = 0, len(data)
        skipping = self.handshake_done and not self._may_drop()
        while i < n:
            if not self.walking:
                self._keep(spans, i, n, False)
                break
            if skipping and not self._in_body and not self._header and not self._dropped_rest():
                end = self._skip(data, i, n)
                if end > i:
                    self._keep(spans, i, end, False)
                    i = end
                    continue
            if len(self._greeting) < GREETING_SIZE:
                take = min(GREETING_SIZE - len(self._greeting), n - i)
                self._greeting += data[i : i + take]
                self._keep(spans, i, i + take, True)
                i += take
                self._check_greeting()
                continue
            if not self._in_body:
                if not self._header and not self._start_frame(data[i]):
                    continue  # not a frame: the loop passes the rest on
                take = min(self._header_size - len(self._header), n - i)
                self._header += data[i : i + take]
                self._pass(spans, i, i + take)
                i += take
                if len(self._header) == self._header_size:
                    self._body_left = int.from_bytes(self._header[1:], "big")
                    self._header.clear()
                    self._in_body = True
                    if self._body_left == 0:
                        self._end_frame()
                continue
            take = min(self._body_left, n - i)
            if self._command and not self.handshake_done and len(self._name) < _NAME_PREFIX:
                self._name += data[i : i + min(take, _NAME_PREFIX - len(self._name))]
            self._pass(spans, i, i + take)
            self._body_left -= take
            i += take
            if self._body_left == 0:
                self._end_frame()
        return _pieces(data, spans)

    # -- the walk ------------------------------------------------------------------------
    def _dropped_rest(self) -> bool:
        """Whether the frames still to come of the current message are to be dropped."""
        return self._in_message and self._drop_message

    def _skip(self, data: bytes, i: int, n: int) -> int:
        """Walk the whole, valid frames of ``data`` from ``i``, keeping them all.

        Returns where it stopped: ``n``, or the start of a frame that is cut short by
        the end of ``data`` or invalid, for the frame-by-frame walk to take over.
        """
        in_message = self._in_message
        while i + 2 <= n:
            flags = data[i]
            if flags not in HEADER_SIZE:
                break
            if flags & LONG:
                if i + 9 > n:
                    break
                end = i + 9 + int.from_bytes(data[i + 1 : i + 9], "big")
            else:
                end = i + 2 + data[i + 1]
            if end > n:
                break
            if not flags & COMMAND:
                in_message = bool(flags & MORE)
            i = end
        self._in_message = in_message
        self._drop_message = False  # what was skipped was kept: so is the rest of it
        return i

    def _check_greeting(self) -> None:
        g = self._greeting
        if (
            (len(g) >= 1 and g[0] != 0xFF)
            or (len(g) >= 10 and not g[9] & 0x01)
            or (len(g) >= 11 and g[10] < 3)
        ):
            self.walking = False
        elif len(g) == GREETING_SIZE:
            self._droppable = bytes(g[12:32]).rstrip(b"\x00") in _PLAIN_FRAMES

    def _start_frame(self, flags: int) -> bool:
        size = HEADER_SIZE.get(flags)
        if size is None:
            self.walking = False
            return False
        self._header_size = size
        self._command = bool(flags & COMMAND)
        self._name.clear()
        if self._command or not self.handshake_done or not self._droppable:
            self._dropping = False
            return True
        if not self._in_message:
            self._drop_message = self._may_drop() and self._take_drop()
        self._dropping = self._drop_message
        self._in_message = bool(flags & MORE)
        return True

    def _end_frame(self) -> None:
        self._in_body = False
        if self._command and not self.handshake_done and self._name:
            length = self._name[0]
            if bytes(self._name[1 : 1 + length]) in _HANDSHAKE_ENDS:
                self.handshake_done = True

    def _pass(self, spans: list[tuple[int, int, bool]], start: int, end: int) -> None:
        if not self._dropping:
            self._keep(spans, start, end, not self.handshake_done)

    @staticmethod
    def _keep(spans: list[tuple[int, int, bool]], start: int, end: int, handshake: bool) -> None:
        if start == end:
            return
        if spans and spans[-1][1] == start and spans[-1][2] == handshake:
            spans[-1] = (spans[-1][0], end, handshake)
        else:
            spans.append((start, end, handshake))


def _pieces(data: bytes, spans: list[tuple[int, int, bool]]) -> list[tuple[bytes, bool]]:
    """The kept bytes of ``data``: spans with the same flag joined, in order."""
    if len(spans) == 1 and spans[0][0] == 0 and spans[0][1] == len(data):
        return [(data, spans[0][2])]
    pieces: list[tuple[bytes, bool]] = []
    parts: list[bytes] = []
    flag = False
    for start, end, handshake in spans:
        if parts and handshake != flag:
            pieces.append((b"".join(parts), flag))
            parts = []
        parts.append(data[start:end])
        flag = handshake
    if parts:
        pieces.append((b"".join(parts), flag))
    return pieces
