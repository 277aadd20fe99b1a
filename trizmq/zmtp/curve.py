"""The CURVE security mechanism (25/ZMTP-CURVE, 26/CurveZMQ) on top of PyNaCl.

Keys: C/c and S/s are the client's and server's long-term public/secret keys,
C'/c' and S'/s' the short-term ones made for one connection. ``Box[X](A->B)`` is
``crypto_box`` of X from A's secret key to B's public key.

Handshake (sizes are the command bodies after the command name)::

    C: HELLO    01 00 | 72 zeros | C' | nonce(8) | Box[64 zeros](C'->S)        194 bytes
    S: WELCOME  nonce(16) | Box[S' | cookie](S->C')                            160 bytes
                cookie = nonce(16) | SecretBox[C' | s'](cookie key)            96 bytes
    C: INITIATE cookie | nonce(8) | Box[C | vouch | metadata](C'->S')          248+ bytes
                vouch = nonce(16) | Box[C' | S](C->S')
    S: READY    nonce(8) | Box[metadata](S'->C')                               24+ bytes

Then every ZMTP frame travels as ``MESSAGE nonce(8) | Box[flags | body]``, in an
outer *message* frame (flags 00/02). Inner flags are libzmq's: bit 0 MORE, bit 1
COMMAND (libzmq-wire-notes §7.1).

Rules:

* Nonce prefixes: ``CurveZMQHELLO---``, ``WELCOME-``, ``COOKIE--``, ``CurveZMQINITIATE``,
  ``VOUCH---``, ``CurveZMQREADY---``, ``CurveZMQMESSAGEC`` (client to server) and
  ``CurveZMQMESSAGES`` (server to client). Short nonces count up from 1 per sender
  (client: HELLO 1, INITIATE 2, then MESSAGEs; server: READY 1, then MESSAGEs); long
  nonces are 16 random bytes.
* Every length is checked before anything is decrypted; every box that fails to
  open, a short nonce that does not go strictly up, a wrong HELLO size or version,
  a cookie this connection did not issue, and a vouch that does not name our
  long-term key and the client's short-term key are :class:`ProtocolError`.
* The server keeps no key material between WELCOME and INITIATE: s' travels inside
  the cookie, sealed with a :class:`CookieKeys` secret shared by every connection of
  one server configuration, which rotates (every ``rotate_after`` cookies, or when
  the driver calls :meth:`CookieKeys.rotate`). The only thing a connection keeps
  is the cookie it sent, so that an INITIATE replayed from another connection is
  refused.
* After a valid INITIATE the server asks ZAP (mechanism ``CURVE``, credentials
  ``[C]``, the client's 32-byte long-term public key); 200 sends READY, 400/500 send
  ERROR with the status code, 300 refuses without ERROR. A driver without an
  authenticator answers 200: any client that knows the server key is admitted.
"""

from __future__ import annotations

import hmac
import struct
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, TypeAlias

from nacl.bindings import (
    crypto_box,
    crypto_box_afternm,
    crypto_box_beforenm,
    crypto_box_keypair,
    crypto_box_open,
    crypto_box_open_afternm,
    crypto_scalarmult_base,
    crypto_secretbox,
    crypto_secretbox_open,
)
from nacl.exceptions import CryptoError
from nacl.utils import random

from .commands import HELLO, INITIATE, READY, WELCOME
from .errors import ProtocolError
from .events import Received
from .frames import COMMAND, MORE
from .mechanism import Command, Mechanism, ZapReply, ZapRequest, zap_metadata
from .metadata import decode_metadata, encode_metadata
from .z85 import KEY_SIZE, decode_key, z85_encode

try:  # PyNaCl >= 1.6: the box as MAC || ciphertext straight, without the zero padding
    from nacl.bindings import crypto_box_easy_afternm as _seal
    from nacl.bindings import crypto_box_open_easy_afternm as _unseal
except ImportError:  # pragma: no cover - PyNaCl 1.5: the same bytes, padded inside
    _seal = crypto_box_afternm
    _unseal = crypto_box_open_afternm

# The MESSAGE boxes of the hot path call libsodium through the cffi module that
# PyNaCl's own bindings call (``nacl._sodium``), into a reused buffer: the bindings'
# argument checks, output allocation and error formatting cost twice the box itself
# for a 64-byte message. Every length is checked here before the call; where that
# module or those functions are missing, the public bindings above do the same work.
#
# That module has no type stubs: the protocols below are the little of cffi used.


class _CArray(Protocol):
    """A cffi ``unsigned char[]`` (``ffi.new``): a length; libsodium writes into it."""

    def __len__(self) -> int: ...


class _CBuffer(Protocol):
    """``ffi.buffer`` of a C array: its slices are ``bytes``, and it exports its memory."""

    def __getitem__(self, index: slice, /) -> bytes: ...

    def __buffer__(self, flags: int, /) -> memoryview: ...


class _FFI(Protocol):
    """The calls made on PyNaCl's cffi ``ffi``."""

    def new(self, cdecl: str, size: int, /) -> _CArray: ...

    def buffer(self, cdata: _CArray, /) -> _CBuffer: ...

    def from_buffer(self, cdecl: str, python_buffer: bytearray, /) -> object: ...


#: ``crypto_box_easy_afternm`` and ``crypto_box_open_easy_afternm`` as cffi exposes
#: them: (out, in, length, nonce pointer, key) -> 0 on success; the nonce pointer is
#: the ``from_buffer`` object, passed through
_BoxCall: TypeAlias = Callable[[_CArray, bytes, int, object, bytes], int]

_ffi: _FFI | None = None
_box_easy: _BoxCall | None = None
_open_easy: _BoxCall | None = None
try:
    from nacl import _sodium

    if hasattr(_sodium.lib, "crypto_box_easy_afternm") and hasattr(
        _sodium.lib, "crypto_box_open_easy_afternm"
    ):
        _ffi = _sodium.ffi
        # looked up once: an attribute of the cffi module costs a lookup a frame
        _box_easy = _sodium.lib.crypto_box_easy_afternm
        _open_easy = _sodium.lib.crypto_box_open_easy_afternm
except ImportError:  # pragma: no cover - a PyNaCl without its cffi module
    pass


__all__ = [
    "CookieKeys",
    "CurveClientMechanism",
    "CurveServerMechanism",
    "curve_keypair",
    "curve_public",
]

MESSAGE = b"MESSAGE"
_HANDSHAKE = frozenset({HELLO, WELCOME, INITIATE, READY})

_VERSION = b"\x01\x00"
_PADDING = bytes(72)
_SIGNATURE = bytes(64)
_MAC = 16
_HELLO_SIZE = 2 + 72 + KEY_SIZE + 8 + 64 + _MAC  # 194
_COOKIE_SIZE = 16 + 2 * KEY_SIZE + _MAC  # 96
_WELCOME_SIZE = 16 + KEY_SIZE + _COOKIE_SIZE + _MAC  # 160
_VOUCH_SIZE = 16 + 2 * KEY_SIZE + _MAC  # 96
_INITIATE_MIN = _COOKIE_SIZE + 8 + KEY_SIZE + _VOUCH_SIZE + _MAC  # 248
_READY_MIN = 8 + _MAC  # 24
_MESSAGE_HEAD = bytes((len(MESSAGE),)) + MESSAGE
_MESSAGE_MIN = len(_MESSAGE_HEAD) + 8 + _MAC + 1  # 33
_MAX_NONCE = (1 << 64) - 1
#: a short nonce written as its 8 wire bytes (big-endian) into the last 8 bytes of a
#: reused 24-byte nonce buffer, without a slice or a keyword
_pack_nonce_into = struct.Struct(">Q").pack_into
#: a MESSAGE body's head and short nonce, read in one call
_unpack_head = struct.Struct(">8sQ").unpack_from
#: what precedes the short nonce of a MESSAGE frame of a short body (< 256 bytes): the
#: frame's header (flags 0, size) and the MESSAGE head, one piece for every size
_SHORT_MESSAGE_PREFIX: tuple[bytes, ...] = tuple(
    bytes((0, size)) + bytes((len(MESSAGE),)) + MESSAGE for size in range(256)
)
#: more frames than one message can have: a message that starts this far from the last
#: nonce cannot run out, so its frames skip the check
_NONCE_HEADROOM = 1 << 40
_NONCE_SAFE = _MAX_NONCE - _NONCE_HEADROOM

Buffer = bytes | bytearray | memoryview

_HELLO_NONCE = b"CurveZMQHELLO---"
_WELCOME_NONCE = b"WELCOME-"
_COOKIE_NONCE = b"COOKIE--"
_INITIATE_NONCE = b"CurveZMQINITIATE"
_VOUCH_NONCE = b"VOUCH---"
_READY_NONCE = b"CurveZMQREADY---"
_CLIENT_MESSAGE_NONCE = b"CurveZMQMESSAGEC"
_SERVER_MESSAGE_NONCE = b"CurveZMQMESSAGES"

# inner flags byte of a MESSAGE (libzmq) <-> ZMTP frame flags
_INNER_MORE = 0x01
_INNER_COMMAND = 0x02
#: inner flags byte (bits 0-1; the Connection refuses MORE with COMMAND) -> ZMTP flags
_FROM_INNER: tuple[int, ...] = tuple(
    (MORE if b & _INNER_MORE else 0) | (COMMAND if b & _INNER_COMMAND else 0) for b in range(4)
)
#: ZMTP flags (MORE/COMMAND bits) -> inner flags byte
_TO_INNER: tuple[bytes, ...] = tuple(
    bytes(((_INNER_MORE if f & MORE else 0) | (_INNER_COMMAND if f & COMMAND else 0),))
    for f in range(8)
)


def curve_keypair() -> tuple[bytes, bytes]:
    """A new long-term key pair as (public, secret), each 40 bytes of Z85.

    Returns:
        A new random Curve25519 key pair ``(public_key, secret_key)``, each key as
        40 bytes of Z85.
    """
    public, secret = crypto_box_keypair()
    return z85_encode(public), z85_encode(secret)


def curve_public(secret_key: bytes | str) -> bytes:
    """The Z85 public key of a secret key (32 raw bytes or 40 Z85 characters).

    Args:
        secret_key: A Curve25519 secret key, as 32 raw bytes or 40 Z85 characters
            (``bytes`` or ``str``).

    Returns:
        The matching public key, as 40 bytes of Z85.

    Raises:
        TypeError: If ``secret_key`` is neither ``bytes`` nor ``str``.
        ValueError: If ``secret_key`` is not 32 raw bytes or 40 valid Z85 characters.
    """
    return z85_encode(crypto_scalarmult_base(decode_key(secret_key, name="secret_key")))


def _short_nonce(counter: int) -> bytes:
    if counter > _MAX_NONCE:
        raise OverflowError("CURVE short nonce exhausted: 2^64-1 commands sent")
    return counter.to_bytes(8, "big")


def _open(box: bytes, nonce: bytes, public: bytes, secret: bytes, what: str) -> bytes:
    try:
        return crypto_box_open(box, nonce, public, secret)
    except CryptoError:
        raise ProtocolError(f"CURVE {what}: the box does not open") from None


def _shared_key(public: bytes, secret: bytes, what: str) -> bytes:
    try:
        return crypto_box_beforenm(public, secret)
    except CryptoError:  # a low-order point offered as a public key
        raise ProtocolError(f"CURVE {what}: unusable public key") from None


def _inner_flags(flags: int) -> int:
    """The ZMTP flags of an opened MESSAGE's inner flags byte, refused if invalid."""
    if flags > _INNER_MORE | _INNER_COMMAND:
        raise ProtocolError(f"invalid inner frame flags 0x{flags:02X} in a CURVE MESSAGE")
    return _FROM_INNER[flags]


def _unexpected(name: bytes, state: str) -> ProtocolError:
    shown = name.decode("ascii", "replace")
    return ProtocolError(f"unexpected {shown} command {state} (CURVE)")


class CookieKeys:
    """The server's rotating cookie secret, shared by the connections of one configuration.

    A cookie sealed with the current or the previous key opens; rotation happens
    every ``rotate_after`` cookies and whenever :meth:`rotate` is called (a driver
    may do so on a timer, e.g. every 60 s as RFC 26 suggests).
    """

    def __init__(self, *, rotate_after: int = 16384) -> None:
        if rotate_after < 1:
            raise ValueError("rotate_after must be at least 1")
        self._rotate_after = rotate_after
        self._current = random(32)
        self._previous: bytes | None = None
        self._issued = 0

    def rotate(self) -> None:
        """Start a new key; cookies of the key before the previous one stop opening."""
        self._previous = self._current
        self._current = random(32)
        self._issued = 0

    def seal(self, plaintext: bytes) -> bytes:
        """A cookie: 16-byte nonce and the secret box of ``plaintext``."""
        if self._issued >= self._rotate_after:
            self.rotate()
        self._issued += 1
        nonce = random(16)
        return nonce + crypto_secretbox(plaintext, _COOKIE_NONCE + nonce, self._current)

    def open(self, cookie: bytes) -> bytes | None:
        """The plaintext of a cookie, or None if no live key opens it."""
        nonce = _COOKIE_NONCE + cookie[:16]
        for key in (self._current, self._previous):
            if key is None:
                continue
            try:
                return crypto_secretbox_open(cookie[16:], nonce, key)
            except CryptoError:
                continue
        return None


class _CurveMechanism(Mechanism):
    """What both sides share: the MESSAGE box once the handshake is done."""

    name = b"CURVE"
    handshake_commands = _HANDSHAKE
    encrypts = True
    overhead = _MESSAGE_MIN
    runs = True

    _send_prefix: bytes
    _receive_prefix: bytes
    #: views of the reused C buffer, set with it by :meth:`_scratch_for` (see __init__)
    _buffer: _CBuffer
    _view: memoryview
    #: the sent nonce's last 8 bytes as a view (the wire), set with the nonce buffers
    _send_short: memoryview

    def __init__(self, *, as_server: bool) -> None:
        super().__init__(as_server=as_server)
        self._local = b""
        self._expect = b""
        #: our last short nonce sent, and the peer's last one received
        self._nonce = 0
        self._peer_nonce = 0
        #: the precomputed box key between the short-term keys
        self._key = b""
        #: the reused C buffer of the MESSAGE boxes (libsodium through cffi), and two
        #: views of it made with it, so that no frame makes a cffi object: a cffi
        #: buffer (its slices are bytes: an opened body) and a memoryview of that (its
        #: slices are views, appended to a write; its items are ints: the inner flags).
        #: The views exist from the first :meth:`_scratch_for` on, as the buffer does.
        self._scratch: _CArray | None = None
        #: the nonces of the MESSAGE boxes, each a reused 24-byte buffer (the prefix,
        #: then the short nonce written in place) with a cffi pointer into it, so that
        #: a box makes no nonce object (the pointers are only passed to libsodium)
        self._send_nonce = bytearray()
        self._send_nonce_c: object = None
        self._receive_nonce = bytearray()
        self._receive_nonce_c: object = None

    def _next_nonce(self) -> bytes:
        self._nonce += 1
        return _short_nonce(self._nonce)

    def _check_nonce(self, nonce: bytes, what: str) -> None:
        value = int.from_bytes(nonce, "big")
        if value <= self._peer_nonce:
            raise ProtocolError(
                f"CURVE {what}: short nonce {value} does not follow {self._peer_nonce}"
            )

    def _check_expected(self, name: bytes) -> None:
        if name != self._expect:
            state = f"while waiting for {self._expect.decode()}" if self._expect else "now"
            raise _unexpected(name, state)

    def encode_frame(self, flags: int, body: bytes | bytearray | memoryview) -> bytes:
        out = bytearray()
        self._box_into(out, _TO_INNER[flags & 7] + bytes(body))
        return bytes(out)

    def _box_into(self, out: bytearray, inner: bytes) -> None:
        """Append one MESSAGE frame boxing ``inner`` (its flags byte, then its body), the
        nonce checked against its limit: commands, and the path without libsodium's
        own calls."""
        nonce = self._next_nonce()
        box = _seal(inner, self._send_prefix + nonce, self._key)
        size = 16 + len(box)  # the MESSAGE head (8), the short nonce (8), the box
        out += bytes((0, size)) if size < 256 else b"\x02" + size.to_bytes(8, "big")
        out += _MESSAGE_HEAD
        out += nonce
        out += box

    def _scratch_for(self, size: int) -> _CArray:
        """A reused C buffer of at least ``size`` bytes for one box (and its views);
        the first call also makes the two nonce buffers (made late, as the scratch
        is: a mechanism that has boxed nothing holds no cffi object). Called only
        where libsodium's own calls were found."""
        ffi = _ffi
        if ffi is None:  # pragma: no cover - the callers check for libsodium first
            raise RuntimeError("CURVE: no cffi module to make a buffer with")
        scratch = self._scratch
        if scratch is None or len(scratch) < size:
            scratch = self._scratch = ffi.new("unsigned char[]", max(size, 512))
            self._buffer = ffi.buffer(scratch)  # slices to bytes
            self._view = memoryview(self._buffer)  # slices to views, indexes to ints
        if self._send_nonce_c is None:
            self._send_nonce = bytearray(self._send_prefix + bytes(8))
            self._send_nonce_c = ffi.from_buffer("unsigned char[]", self._send_nonce)
            self._send_short = memoryview(self._send_nonce)[16:]
            self._receive_nonce = bytearray(self._receive_prefix + bytes(8))
            self._receive_nonce_c = ffi.from_buffer("unsigned char[]", self._receive_nonce)
        return scratch

    def encode_message_into(self, out: bytearray, frames: Sequence[Buffer]) -> None:
        """Append one message as MESSAGE frames, one box per frame: the writer's and
        write-through's hot path (the base class's batch form loops over it)."""
        box = _box_easy
        if box is None or self._nonce > _NONCE_SAFE:
            last = len(frames) - 1
            for i, frame in enumerate(frames):
                self._box_into(out, (b"\x01" if i < last else b"\x00") + bytes(frame))
            return
        key = self._key
        more = len(frames) - 1  # frames after this one
        for frame in frames:
            inner = (b"\x01" if more else b"\x00") + frame  # bytes, whatever frame's type
            more -= 1
            size = len(inner)
            scratch = self._scratch
            if scratch is None or len(scratch) < size + _MAC:
                scratch = self._scratch_for(size + _MAC)
            self._nonce = counter = self._nonce + 1
            _pack_nonce_into(self._send_nonce, 16, counter)
            if box(scratch, inner, size, self._send_nonce_c, key):
                raise RuntimeError("libsodium could not box a CURVE MESSAGE")
            # the MESSAGE head, the short nonce and the MAC: 32 bytes around the inner
            # frame; the frame's header and the head come as one piece when short
            if size < 224:
                out += _SHORT_MESSAGE_PREFIX[size + 32]
            else:
                out += b"\x02" + (size + 32).to_bytes(8, "big")
                out += _MESSAGE_HEAD
            out += self._send_short
            out += self._view[: size + _MAC]

    def seal_run(
        self,
        out: bytearray,
        items: Sequence[object],
        start: int,
        stop: int,
        ends: list[int] | None = None,
    ) -> int:
        """:meth:`encode_message_into` of each one-frame message of a run, in one loop:
        the writer's batch of a stream of short messages, without a call, a frame
        loop and the attribute reads per message (the boxes are the same)."""
        counter = self._nonce
        box = _box_easy
        if box is None or counter > _NONCE_SAFE - len(items):
            return start
        scratch = self._scratch
        if scratch is None or len(scratch) < 256:
            scratch = self._scratch_for(256)
        key, view = self._key, self._view
        nonce, nonce_c, short = self._send_nonce, self._send_nonce_c, self._send_short
        heads, pack_into = _SHORT_MESSAGE_PREFIX, _pack_nonce_into
        index, count = start, len(items)
        try:
            while index < count:
                item = items[index]
                if item.__class__ is not list or len(item) != 1:
                    break
                inner = b"\x00" + item[0]
                size = len(inner)
                if size >= 224:
                    break  # a long frame header: encode_message_into's
                counter += 1
                pack_into(nonce, 16, counter)
                if box(scratch, inner, size, nonce_c, key):
                    raise RuntimeError("libsodium could not box a CURVE MESSAGE")
                out += heads[size + 32]
                out += short
                out += view[: size + _MAC]
                index += 1
                if ends is not None:
                    ends.append(len(out))
                if len(out) >= stop:
                    break
        finally:
            self._nonce = counter
        return index

    def open_run(
        self,
        src: bytes,
        pos: int,
        limit: int,
        events: list[Received],
        bare: bool,
    ) -> tuple[int, int, bytes | None]:
        """The reader's loop over a read's MESSAGE frames with short headers, opened in
        place (see the base class): per frame, the checks :meth:`decode_frame_at`
        makes, one libsodium call and one append."""
        unseal = _open_easy
        if unseal is None:
            return pos, 0, None
        scratch = self._scratch
        if scratch is None or len(scratch) < 256:
            scratch = self._scratch_for(256)
        key, view, buffer = self._key, self._view, self._buffer
        nonce, nonce_c = self._receive_nonce, self._receive_nonce_c
        unpack, pack_into, message_head = _unpack_head, _pack_nonce_into, _MESSAGE_HEAD
        peer = self._peer_nonce
        append = events.append
        n = len(src)
        # the outer frame (header 2, head 8, nonce 8, box) must fit, and its inner
        # frame (flags 1 + body, header 2 at least) be within the limit
        try:
            while pos + 1 < n and src[pos] < 2:
                size = src[pos + 1]
                end = pos + 2 + size
                if end > n or size < _MESSAGE_MIN or size - _MESSAGE_MIN + 2 > limit:
                    break
                head, value = unpack(src, pos + 2)
                if head != message_head or value <= peer:
                    break
                boxed = size - 16  # the MAC and the inner frame
                pack_into(nonce, 16, value)
                if unseal(scratch, src[pos + 18 : end], boxed, nonce_c, key):
                    break
                peer = value
                pos = end
                flags = view[0]
                if flags:
                    return pos, _inner_flags(flags), buffer[1 : boxed - _MAC]
                append(buffer[1 : boxed - _MAC] if bare else [buffer[1 : boxed - _MAC]])
        finally:
            self._peer_nonce = peer
        return pos, 0, None

    def decode_frame(self, body: bytes) -> tuple[int, bytes]:
        return self.decode_frame_at(body, 0, len(body))

    def decode_frame_at(self, src: bytes, start: int, end: int) -> tuple[int, bytes]:
        """The MESSAGE frame body ``src[start:end]`` opened, read in place: the reader's
        hot path, once per encrypted frame."""
        if end - start < _MESSAGE_MIN:
            raise ProtocolError(f"CURVE MESSAGE of {end - start} bytes is too short")
        head, value = _unpack_head(src, start)
        if head != _MESSAGE_HEAD:
            raise ProtocolError("expected a CURVE MESSAGE after the handshake")
        if value <= self._peer_nonce:
            raise ProtocolError(
                f"CURVE MESSAGE: short nonce {value} does not follow {self._peer_nonce}"
            )
        if _open_easy is not None:  # the global read twice: cheaper than a local here
            size = end - start - 16 - _MAC  # >= 1: checked against _MESSAGE_MIN above
            scratch = self._scratch
            if scratch is None or len(scratch) < size:
                scratch = self._scratch_for(size)
            _pack_nonce_into(self._receive_nonce, 16, value)
            box = src[start + 16 : end]
            if _open_easy(scratch, box, size + _MAC, self._receive_nonce_c, self._key):
                raise ProtocolError("CURVE MESSAGE: the box does not open")
            self._peer_nonce = value
            return _inner_flags(self._view[0]), self._buffer[1:size]
        nonce = self._receive_prefix + src[start + 8 : start + 16]
        try:
            plain = _unseal(src[start + 16 : end], nonce, self._key)
        except CryptoError:
            raise ProtocolError("CURVE MESSAGE: the box does not open") from None
        self._peer_nonce = value
        return _inner_flags(plain[0]), plain[1:]


class CurveClientMechanism(_CurveMechanism):
    """The CURVE client: proves it holds its key pair to a server whose key it knows."""

    _send_prefix = _CLIENT_MESSAGE_NONCE
    _receive_prefix = _SERVER_MESSAGE_NONCE

    def __init__(
        self, server_key: bytes | str, public_key: bytes | str, secret_key: bytes | str
    ) -> None:
        super().__init__(as_server=False)
        self._server_key = decode_key(server_key, name="server_key")
        self._public = decode_key(public_key, name="public_key")
        self._secret = decode_key(secret_key, name="secret_key")
        if crypto_scalarmult_base(self._secret) != self._public:
            raise ValueError("public_key is not the public key of secret_key")
        self._short_public, self._short_secret = crypto_box_keypair()

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        self._local = encode_metadata(local_metadata)
        nonce = self._next_nonce()
        signature = crypto_box(
            _SIGNATURE, _HELLO_NONCE + nonce, self._server_key, self._short_secret
        )
        self._expect = WELCOME
        return [(HELLO, _VERSION + _PADDING + self._short_public + nonce + signature)]

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        self._check_expected(name)
        if name == WELCOME:
            return self._on_welcome(body)
        return self._on_ready(body)

    def _on_welcome(self, body: bytes) -> list[Command]:
        if len(body) != _WELCOME_SIZE:
            raise ProtocolError(f"CURVE WELCOME of {len(body)} bytes, not {_WELCOME_SIZE}")
        plain = _open(
            body[16:], _WELCOME_NONCE + body[:16], self._server_key, self._short_secret, "WELCOME"
        )
        server_short = plain[:KEY_SIZE]
        cookie = plain[KEY_SIZE:]
        self._key = _shared_key(server_short, self._short_secret, "WELCOME")
        vouch_nonce = random(16)
        vouch = vouch_nonce + crypto_box(
            self._short_public + self._server_key,
            _VOUCH_NONCE + vouch_nonce,
            server_short,
            self._secret,
        )
        nonce = self._next_nonce()
        box = crypto_box_afternm(
            self._public + vouch + self._local, _INITIATE_NONCE + nonce, self._key
        )
        self._short_secret = b""  # only the precomputed key is needed from now on
        self._expect = READY
        return [(INITIATE, cookie + nonce + box)]

    def _on_ready(self, body: bytes) -> list[Command]:
        if len(body) < _READY_MIN:
            raise ProtocolError(f"CURVE READY of {len(body)} bytes is too short")
        nonce = body[:8]
        self._check_nonce(nonce, "READY")
        try:
            plain = crypto_box_open_afternm(body[8:], _READY_NONCE + nonce, self._key)
        except CryptoError:
            raise ProtocolError("CURVE READY: the box does not open") from None
        self._peer_nonce = int.from_bytes(nonce, "big")
        self.peer_metadata = decode_metadata(plain)
        self._expect = b""
        self.complete = True
        return []


class CurveServerMechanism(_CurveMechanism):
    """The CURVE server: admits clients that know its public key, asking ZAP about them."""

    _send_prefix = _SERVER_MESSAGE_NONCE
    _receive_prefix = _CLIENT_MESSAGE_NONCE

    def __init__(self, secret_key: bytes | str, *, cookie_keys: CookieKeys | None = None) -> None:
        super().__init__(as_server=True)
        self._secret = decode_key(secret_key, name="secret_key")
        self._public = crypto_scalarmult_base(self._secret)
        self._cookie_keys = cookie_keys if cookie_keys is not None else CookieKeys()
        #: the cookie sent in our WELCOME: the INITIATE must return exactly this one
        self._cookie = b""
        self._peer_properties: dict[str, bytes] = {}

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        self._local = encode_metadata(local_metadata)
        self._expect = HELLO
        return []

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        self._check_expected(name)
        if name == HELLO:
            return self._on_hello(body)
        return self._on_initiate(body)

    def _on_hello(self, body: bytes) -> list[Command]:
        if len(body) != _HELLO_SIZE:
            raise ProtocolError(f"CURVE HELLO of {len(body)} bytes, not {_HELLO_SIZE}")
        if body[:2] != _VERSION:
            raise ProtocolError(f"unsupported CurveZMQ version {body[0]}.{body[1]}")
        client_short = body[74:106]
        nonce = body[106:114]
        self._check_nonce(nonce, "HELLO")
        signature = _open(body[114:], _HELLO_NONCE + nonce, client_short, self._secret, "HELLO")
        if not hmac.compare_digest(signature, _SIGNATURE):
            raise ProtocolError("CURVE HELLO: the signature box does not hold 64 zeros")
        self._peer_nonce = int.from_bytes(nonce, "big")
        short_public, short_secret = crypto_box_keypair()
        cookie = self._cookie_keys.seal(client_short + short_secret)
        welcome_nonce = random(16)
        box = crypto_box(
            short_public + cookie, _WELCOME_NONCE + welcome_nonce, client_short, self._secret
        )
        self._cookie = cookie
        self._expect = INITIATE
        return [(WELCOME, welcome_nonce + box)]

    def _on_initiate(self, body: bytes) -> list[Command]:
        if len(body) < _INITIATE_MIN:
            raise ProtocolError(f"CURVE INITIATE of {len(body)} bytes is too short")
        cookie = body[:_COOKIE_SIZE]
        if not hmac.compare_digest(cookie, self._cookie):
            raise ProtocolError("CURVE INITIATE: the cookie is not the one we sent")
        keys = self._cookie_keys.open(cookie)
        if keys is None:
            raise ProtocolError("CURVE INITIATE: the cookie has expired or is forged")
        client_short, short_secret = keys[:KEY_SIZE], keys[KEY_SIZE:]
        nonce = body[_COOKIE_SIZE : _COOKIE_SIZE + 8]
        self._check_nonce(nonce, "INITIATE")
        key = _shared_key(client_short, short_secret, "INITIATE")
        try:
            plain = crypto_box_open_afternm(body[_COOKIE_SIZE + 8 :], _INITIATE_NONCE + nonce, key)
        except CryptoError:
            raise ProtocolError("CURVE INITIATE: the box does not open") from None
        client_long = plain[:KEY_SIZE]
        vouch_nonce = plain[KEY_SIZE : KEY_SIZE + 16]
        vouch_box = plain[KEY_SIZE + 16 : KEY_SIZE + _VOUCH_SIZE]
        vouch = _open(vouch_box, _VOUCH_NONCE + vouch_nonce, client_long, short_secret, "vouch")
        if not hmac.compare_digest(vouch, client_short + self._public):
            raise ProtocolError("CURVE INITIATE: the vouch does not name this connection")
        self._peer_properties = decode_metadata(plain[KEY_SIZE + _VOUCH_SIZE :])
        self._peer_nonce = int.from_bytes(nonce, "big")
        self._key = key
        self._cookie = b""
        self._expect = b""
        self.pending_zap = ZapRequest(self.name, (client_long,))
        return []

    def on_zap_reply(self, reply: ZapReply) -> list[Command]:
        refusal = self._zap_refused(reply)
        if refusal is not None:
            return refusal
        self.peer_metadata = zap_metadata(self._peer_properties, reply)
        nonce = self._next_nonce()
        box = crypto_box_afternm(self._local, _READY_NONCE + nonce, self._key)
        self.complete = True
        return [(READY, nonce + box)]
