"""How ``send`` reads messages from stdin and ``recv`` writes them to stdout.

Three formats, each a decoder (bytes in, whole messages out) and an encoder:

``line`` (default)
    One message per line; the trailing ``\\n`` is not part of it. With a separator
    (``--separator '|'``) a line holds several frames: ``a|b|c`` is three frames. On
    output the frames are joined with the separator, or with one space when none
    was given (then the output cannot be split back reliably).
``raw``
    The whole of stdin is one single-frame message; on output each message is
    written as its frames concatenated, with nothing added.
``length-prefixed``
    Binary safe: every frame is a 4-byte big-endian length then that many bytes.
    The top bit of the length (:data:`MORE`) says that another frame of the same
    message follows, as ZMTP's MORE flag does; a single-frame message is therefore
    just ``len + bytes``. A frame is at most ``2**31 - 1`` bytes.
"""

from __future__ import annotations

import struct

from ._common import CliError

__all__ = [
    "FORMATS",
    "MORE",
    "Decoder",
    "LengthPrefixedDecoder",
    "LineDecoder",
    "RawDecoder",
    "encode",
    "make_decoder",
]

FORMATS = ("line", "raw", "length-prefixed")

#: the bit of a length prefix that says "another frame of this message follows"
MORE = 0x8000_0000
_LENGTH = struct.Struct(">I")


class Decoder:
    """Feed bytes, get whole messages; :meth:`finish` at end of input."""

    def feed(self, data: bytes) -> list[list[bytes]]:
        raise NotImplementedError

    def finish(self) -> list[list[bytes]]:
        raise NotImplementedError


class LineDecoder(Decoder):
    """One message per line, split into frames at ``separator`` when there is one."""

    def __init__(self, separator: bytes | None) -> None:
        self.separator = separator
        self._buffer = bytearray()

    def _message(self, line: bytes) -> list[bytes]:
        if self.separator:
            return line.split(self.separator)
        return [line]

    def feed(self, data: bytes) -> list[list[bytes]]:
        self._buffer += data
        if b"\n" not in data:
            return []
        *lines, rest = bytes(self._buffer).split(b"\n")
        self._buffer = bytearray(rest)
        return [self._message(line) for line in lines]

    def finish(self) -> list[list[bytes]]:
        if not self._buffer:
            return []
        line, self._buffer = bytes(self._buffer), bytearray()
        return [self._message(line)]


class RawDecoder(Decoder):
    """All of the input is one single-frame message."""

    def __init__(self) -> None:
        self._chunks: list[bytes] = []

    def feed(self, data: bytes) -> list[list[bytes]]:
        self._chunks.append(data)
        return []

    def finish(self) -> list[list[bytes]]:
        data, self._chunks = b"".join(self._chunks), []
        return [[data]]


class LengthPrefixedDecoder(Decoder):
    """4-byte big-endian length (top bit: more frames follow) + bytes, per frame."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._frames: list[bytes] = []

    def feed(self, data: bytes) -> list[list[bytes]]:
        self._buffer += data
        out: list[list[bytes]] = []
        pos = 0
        buf = self._buffer
        while len(buf) - pos >= 4:
            (word,) = _LENGTH.unpack_from(buf, pos)
            size = word & ~MORE
            if len(buf) - pos - 4 < size:
                break
            self._frames.append(bytes(buf[pos + 4 : pos + 4 + size]))
            pos += 4 + size
            if not word & MORE:
                out.append(self._frames)
                self._frames = []
        del buf[:pos]
        return out

    def finish(self) -> list[list[bytes]]:
        if self._buffer or self._frames:
            raise CliError(
                "length-prefixed input ends inside a message "
                f"({len(self._buffer)} stray bytes, {len(self._frames)} frames with MORE set)"
            )
        return []


def make_decoder(fmt: str, separator: bytes | None) -> Decoder:
    """The decoder of format ``fmt`` (one of :data:`FORMATS`)."""
    if fmt == "raw":
        return RawDecoder()
    if fmt == "length-prefixed":
        return LengthPrefixedDecoder()
    return LineDecoder(separator)


def encode(fmt: str, frames: list[bytes], separator: bytes | None) -> bytes:
    """The bytes ``recv`` writes for one message in format ``fmt``."""
    if fmt == "raw":
        return b"".join(frames)
    if fmt == "length-prefixed":
        if any(len(frame) >= MORE for frame in frames):
            raise CliError("a frame of 2 GiB or more cannot be written length-prefixed")
        last = len(frames) - 1
        return b"".join(
            _LENGTH.pack(len(frame) | (MORE if i < last else 0)) + frame
            for i, frame in enumerate(frames)
        )
    return (separator or b" ").join(frames) + b"\n"
