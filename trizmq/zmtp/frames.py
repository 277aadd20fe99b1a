"""The ZMTP 3.x frame layout: flag bits, header sizes and the frame encoder.

A frame is ``flags (1 byte) | size (1 byte, or 8 bytes big-endian if LONG) | body``.

Rules (23/ZMTP, 37/ZMTP §Framing, libzmq-wire-notes §7.3):

* :data:`HEADER_SIZE` is the table of every *valid* flags byte and the header
  length it implies. Any other byte is an error, explained by :func:`flags_error`:
  reserved bits 3-7 set (the RFC says they MUST be zero; libzmq ignores them, we
  refuse), or a command with MORE.
* The encoder picks the short form for bodies of 0-255 bytes and the long form
  above; the decoder accepts a long form for a small body (libzmq does too).
* Short headers come from a precomputed table, so encoding allocates nothing per
  frame beyond the output buffer.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "COMMAND",
    "HEADER_SIZE",
    "LONG",
    "LONG_HEADER",
    "MAX_FRAME_SIZE",
    "MORE",
    "SHORT_HEADERS",
    "encode_frame",
    "flags_error",
    "frame_header",
]

MORE = 0x01
LONG = 0x02
COMMAND = 0x04
_RESERVED = 0xF8

#: every valid flags byte -> length of the header it starts (flags + size field)
HEADER_SIZE: Mapping[int, int] = MappingProxyType(
    {
        0x00: 2,  # last message frame
        MORE: 2,  # message frame, more follow
        LONG: 9,
        LONG | MORE: 9,
        COMMAND: 2,
        COMMAND | LONG: 9,
    }
)

#: the grammar allows bodies up to 2^63-1 bytes
MAX_FRAME_SIZE = (1 << 63) - 1

#: SHORT_HEADERS[flags][size]: the 2-byte header of a short frame, for flags 0..7
SHORT_HEADERS: tuple[tuple[bytes, ...], ...] = tuple(
    tuple(bytes((flags, size)) for size in range(256)) for flags in range(8)
)

#: packs (flags | LONG, size) into a 9-byte long header
LONG_HEADER = struct.Struct(">BQ")


def flags_error(flags: int) -> str:
    """Why ``flags`` (a byte not in :data:`HEADER_SIZE`) is not a valid frame start."""
    if flags & _RESERVED:
        return f"reserved frame flag bits set (flags 0x{flags:02X})"
    return f"command frame with the MORE flag set (flags 0x{flags:02X})"


def frame_header(flags: int, size: int) -> bytes:
    """The header of a frame with ``flags`` (MORE/COMMAND bits) and a ``size``-byte body."""
    if size < 256:
        return SHORT_HEADERS[flags][size]
    return LONG_HEADER.pack(flags | LONG, size)


def encode_frame(flags: int, body: bytes | bytearray | memoryview) -> bytes:
    """One whole frame: header chosen for ``len(body)``, then the body."""
    return frame_header(flags, len(body)) + body
