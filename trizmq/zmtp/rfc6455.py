"""RFC 6455 frames (section 5.2) for the data path of a WebSocket, sans I/O.

Once wsproto has done the HTTP upgrade, a ZWS connection (:mod:`trizmq.zmtp.zws`)
reads and writes its frames here: a :class:`FrameDecoder` turns bytes into
:data:`Piece` tuples, a :class:`FrameEncoder` turns payloads into frames. What is
left to wsproto is the upgrade and the closing handshake: a CLOSE frame is handed
on as it came, header and all, for wsproto to read and answer.

A frame::

    FIN RSV1 RSV2 RSV3 opcode(4) | MASK length(7) | length(16 or 64)? | key(4)? | payload

Rules (the peer's frames; each broken one is a :class:`WebSocketError`, a remote
error carrying the close code 1002, "protocol error"):

1. No RSV bit is set: no extension is ever negotiated.
2. The opcode is one of :data:`OPCODES` (continuation, text, binary, close, ping,
   pong); the others are reserved.
3. A control frame (close, ping, pong) is not fragmented and carries at most 125
   bytes.
4. A client's frames are masked, a server's are not.
5. The length takes its shortest form, and a 64-bit length has its top bit clear.
6. A continuation frame continues a message that is open; a text or binary frame
   starts one only when none is open.

Strategy: a data frame's payload is handed on as it arrives, in one piece when the
frame is whole in the bytes given, else in several, each saying how much of the
frame is still to come (the first as soon as the header is read, with nothing of the
payload yet when none came: a caller refuses an oversized frame from its header
alone, before anything of it is kept). Only an incomplete header or control frame is
kept between calls (at most :data:`MAX_HEADER` + 125 bytes). Unmasking and masking are
one call per piece, at C speed through ``websockets.speedups.apply_mask`` (the
compiled masker of the ``websockets`` package) or, where it cannot be imported, an
``int.from_bytes`` XOR over the whole payload (:func:`python_apply_mask`). Masking
keys come from ``os.urandom``, drawn :data:`KEY_POOL` bytes at a time.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

from .encoding import Buffer
from .errors import ProtocolError

__all__ = [
    "BINARY",
    "CLOSE",
    "CONTINUATION",
    "CONTROL_OPCODES",
    "KEY_POOL",
    "MAX_CONTROL",
    "MAX_HEADER",
    "OPCODES",
    "PING",
    "PONG",
    "PROTOCOL_ERROR",
    "TEXT",
    "FrameDecoder",
    "FrameEncoder",
    "Piece",
    "WebSocketError",
    "apply_mask",
    "python_apply_mask",
]

CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
#: every opcode of RFC 6455, with its name (the others are reserved)
OPCODES = {
    CONTINUATION: "continuation",
    TEXT: "text",
    BINARY: "binary",
    CLOSE: "close",
    PING: "ping",
    PONG: "pong",
}
CONTROL_OPCODES = frozenset({CLOSE, PING, PONG})
#: the longest control frame payload
MAX_CONTROL = 125
#: the longest header: 2 bytes, a 64-bit length, a masking key
MAX_HEADER = 14
#: the close code of every rule broken here
PROTOCOL_ERROR = 1002
#: random bytes drawn at a time for masking keys (1024 keys)
KEY_POOL = 4096

_FIN = 0x80
_RSV = 0x70
_MASK = 0x80
_LENGTH_16 = 126
_LENGTH_64 = 127
_TOP_BIT = 1 << 63
#: a header's first two bytes and a 16-bit or a 64-bit length
_HEAD_16 = struct.Struct("!BBH")
_HEAD_64 = struct.Struct("!BBQ")
#: from this payload size on, a frame's head and body are masked apart (one call
#: more, one copy of the payload less)
_SPLIT_MASKING = 1024

#: one piece of a frame: its opcode, payload bytes (unmasked; for a CLOSE, the whole
#: frame as it came), how many bytes of its payload are still to come (0: the frame
#: is complete), and its FIN bit (the message ends with this frame)
Piece = tuple[int, bytes, int, bool]


def python_apply_mask(data: Buffer, key: bytes) -> bytes:
    """``data`` XORed with the 4-byte ``key`` repeated: as one integer XOR."""
    size = len(data)
    if not size:
        return b""
    stream = (key * (size // 4 + 1))[:size]
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(size, "big")


apply_mask: Callable[[Buffer, bytes], bytes]
try:
    from websockets.speedups import apply_mask
except ImportError:  # pragma: no cover - the websockets wheel is a dependency
    apply_mask = python_apply_mask


class WebSocketError(ProtocolError):
    """A frame broke RFC 6455; :attr:`code` is the close code that says so."""

    code: int

    def __init__(self, reason: str, code: int = PROTOCOL_ERROR) -> None:
        super().__init__(f"{reason} (WebSocket close code {code})")
        self.code = code


def _length_field(size: int, mask_bit: int) -> bytes:
    """The second byte of a header and the extended length, for ``size`` bytes."""
    if size <= MAX_CONTROL:
        return bytes((mask_bit | size,))
    if size < 1 << 16:
        return bytes((mask_bit | _LENGTH_16,)) + size.to_bytes(2, "big")
    return bytes((mask_bit | _LENGTH_64,)) + size.to_bytes(8, "big")


class FrameEncoder:
    """Frames of one side: masked with a fresh key each when ``client``."""

    __slots__ = ("_apply", "_heads", "_keys", "_mask_bit", "_used", "client")

    def __init__(self, *, client: bool, masker: Callable[[Buffer, bytes], bytes] | None = None):
        self.client = client
        self._mask_bit = _MASK if client else 0
        self._apply = masker or apply_mask
        self._keys = b""
        self._used = 0
        #: the headers of final binary frames of up to 125 bytes, by size
        self._heads = [bytes((_FIN | BINARY, self._mask_bit | n)) for n in range(MAX_CONTROL + 1)]

    def _key(self) -> bytes:
        used = self._used
        if used == len(self._keys):
            self._keys = os.urandom(KEY_POOL)
            used = 0
        self._used = used + 4
        return self._keys[used : used + 4]

    def header(self, opcode: int, size: int, fin: bool = True) -> bytes:
        """The header of a frame of ``size`` payload bytes (without a masking key)."""
        return bytes((_FIN | opcode if fin else opcode,)) + _length_field(size, self._mask_bit)

    def frame(self, opcode: int, payload: Buffer, fin: bool = True) -> bytes:
        """One whole frame."""
        if opcode in CONTROL_OPCODES and (len(payload) > MAX_CONTROL or not fin):
            raise ValueError("a control frame carries at most 125 bytes, in one frame")
        head = self.header(opcode, len(payload), fin)
        if not self.client:
            return head + payload
        key = self._key()
        return head + key + self._apply(payload, key)

    def binary_into(self, out: bytearray, head: bytes, body: Buffer) -> None:
        """Append one final binary frame whose payload is ``head`` then ``body`` (two
        parts, so that a caller's prefix costs no copy of the body unmasked)."""
        size = len(head) + len(body)
        if size <= MAX_CONTROL:
            out += self._heads[size]
        elif size < 1 << 16:
            out += _HEAD_16.pack(_FIN | BINARY, self._mask_bit | _LENGTH_16, size)
        else:
            out += _HEAD_64.pack(_FIN | BINARY, self._mask_bit | _LENGTH_64, size)
        if not self.client:
            out += head
            out += body
            return
        key = self._key()
        out += key
        if size < _SPLIT_MASKING:
            out += self._apply(head + body, key)
            return
        # the body masked where it lies, with the key turned to its offset: no copy
        # of it joined to the head
        out += self._apply(head, key)
        turn = len(head) % 4
        out += self._apply(body, key[turn:] + key[:turn])


def _length_64(src: bytes, pos: int) -> tuple[int, int]:
    """Where the payload of the frame at ``pos`` starts (before any masking key) and
    its length, read from its 64-bit length field and checked (rule 5); a start past
    the end of ``src`` when the field is not all here. The 16-bit field, far more
    common, is read inline."""
    start = pos + 10
    if start > len(src):
        return start, 0
    size = int.from_bytes(src[pos + 2 : start], "big")
    if size >> 16 == 0:
        raise WebSocketError(f"a length of {size} in 64 bits (16 suffice)")
    if size & _TOP_BIT:
        raise WebSocketError("a 64-bit length with its top bit set")
    return start, size


def _header_error(b0: int, masked: bool) -> WebSocketError:
    """A frame whose reserved bits are set (rule 1) or whose mask bit is wrong (rule 4)."""
    if b0 & _RSV:
        return WebSocketError(f"reserved bits 0x{b0 & _RSV:02x} set in a frame")
    return WebSocketError(
        "a client frame that is not masked" if masked else "a server frame that is masked"
    )


def _sequence_error(opcode: int) -> WebSocketError:
    """A data frame out of its place in a message (rule 6)."""
    if opcode:
        return WebSocketError(f"a {OPCODES[opcode]} frame inside a fragmented message")
    return WebSocketError("a continuation frame with no message open")


class FrameDecoder:
    """The peer's frames, checked against the rules; see the module docstring.

    ``client`` is our side: a client reads a server's unmasked frames, a server a
    client's masked ones. After a CLOSE frame nothing more is read.
    """

    __slots__ = (
        "_apply",
        "_done",
        "_fin",
        "_in_message",
        "_key",
        "_masked",
        "_opcode",
        "_remaining",
        "_rest",
        "closed",
    )

    def __init__(
        self, *, client: bool, masker: Callable[[Buffer, bytes], bytes] | None = None
    ) -> None:
        self._masked = not client
        self._apply = masker or apply_mask
        #: an incomplete header or control frame, kept until the rest comes
        self._rest = b""
        #: the data frame whose payload is arriving: bytes to come, opcode, FIN, key,
        #: and bytes of it already handed on (the key's phase)
        self._remaining = 0
        self._opcode = 0
        self._fin = False
        self._key = b""
        self._done = 0
        #: a fragmented message is open: its next data frame is a continuation
        self._in_message = False
        #: a CLOSE frame was read
        self.closed = False

    @property
    def in_frame(self) -> bool:
        """Part of a frame was read, and not the rest."""
        return bool(self._remaining or self._rest)

    @property
    def in_message(self) -> bool:
        """A data message was begun and not finished."""
        return self._in_message or bool(self._remaining)

    def receive_data(self, data: Buffer) -> list[Piece]:
        """The pieces of frames that ``data`` completes or carries, in order."""
        pieces: list[Piece] = []
        if self.closed or not data:
            return pieces
        if self._rest:
            src = self._rest + data
            self._rest = b""
        else:
            src = data if isinstance(data, bytes) else bytes(data)
        pos = 0
        end = len(src)
        if self._remaining:
            pos = self._payload(src, 0, pieces)
        masked = self._masked
        mask_bit = _MASK if masked else 0
        apply = self._apply
        append = pieces.append
        in_message = self._in_message
        while pos < end:
            if end - pos < 2:
                self._rest = bytes(src[pos:])
                break
            b0 = src[pos]
            b1 = src[pos + 1]
            size = b1 ^ mask_bit
            if b0 == 0x82 and size < _LENGTH_16 and not in_message:
                # the commonest: a whole binary message of up to 125 bytes, its mask
                # bit as it should be (else size is 128 or more), all of it here
                if masked:
                    start = pos + 6
                    stop = start + size
                    if stop <= end:
                        append((BINARY, apply(src[start:stop], src[pos + 2 : start]), 0, True))
                        pos = stop
                        continue
                else:
                    stop = pos + 2 + size
                    if stop <= end:
                        append((BINARY, src[pos + 2 : stop], 0, True))
                        pos = stop
                        continue
            size = b1 & 0x7F
            start = pos + 2
            if size >= _LENGTH_16:
                if size == _LENGTH_16:
                    start += 2
                    size = int.from_bytes(src[pos + 2 : start], "big")
                    if size <= MAX_CONTROL and start <= end:
                        raise WebSocketError(f"a length of {size} in 16 bits (7 suffice)")
                else:
                    start, size = _length_64(src, pos)
                if start > end:  # the length is not all here: size is no size yet
                    self._rest = bytes(src[pos:])
                    break
            opcode = b0 & 0x0F
            if b0 & _RSV or b1 & _MASK != mask_bit:
                raise _header_error(b0, masked)
            key = b""
            if masked:
                key = src[start : start + 4]
                start += 4
                if start > end:
                    self._rest = bytes(src[pos:])
                    break
            fin = b0 >= _FIN
            if opcode > BINARY:
                pos = self._control(src, pos, start, size, b0, key, pieces)
                if pos < 0:
                    break
                continue
            if opcode:
                if in_message:
                    raise _sequence_error(opcode)
            elif not in_message:
                raise _sequence_error(opcode)
            in_message = not fin
            stop = start + size
            if stop <= end:
                # the commonest: the whole frame is here
                payload = src[start:stop]
                append((opcode, apply(payload, key) if masked else payload, 0, fin))
                pos = stop
                continue
            self._opcode = opcode
            self._fin = fin
            self._key = key
            self._done = 0
            self._remaining = size
            pos = self._payload(src, start, pieces)
        self._in_message = in_message
        return pieces

    def _control(
        self, src: bytes, pos: int, start: int, size: int, b0: int, key: bytes, pieces: list[Piece]
    ) -> int:
        """The control frame at ``pos`` (its payload of ``size`` bytes from ``start``,
        its first byte ``b0``), checked and handed on whole: return where it ends, or
        -1 when nothing more is read now (it is not all here, and kept until it is;
        or it is a CLOSE, after which nothing more is read)."""
        opcode = b0 & 0x0F
        if opcode not in CONTROL_OPCODES:
            raise WebSocketError(f"a frame of the reserved opcode 0x{opcode:x}")
        if b0 < _FIN:
            raise WebSocketError(f"a fragmented {OPCODES[opcode]} frame")
        if size > MAX_CONTROL:
            raise WebSocketError(f"a {OPCODES[opcode]} frame of {size} bytes (over 125)")
        stop = start + size
        if stop > len(src):
            self._rest = bytes(src[pos:])
            return -1
        if opcode == CLOSE:
            pieces.append((CLOSE, bytes(src[pos:stop]), 0, True))
            self.closed = True
            return -1
        payload = src[start:stop]
        pieces.append((opcode, self._apply(payload, key) if self._masked else payload, 0, True))
        return stop

    def _payload(self, src: bytes, pos: int, pieces: list[Piece]) -> int:
        """The open data frame's payload from ``src[pos:]``: one piece (possibly
        empty, when only its header came), and where the frame ends in ``src``."""
        take = min(self._remaining, len(src) - pos)
        payload = src[pos : pos + take]
        if self._masked:
            phase = self._done % 4
            payload = self._apply(payload, self._key[phase:] + self._key[:phase])
        self._remaining -= take
        self._done += take
        pieces.append((self._opcode, payload, self._remaining, self._fin))
        return pos + take
