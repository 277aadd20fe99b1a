"""The message-part transform of ``lz4+tcp://`` and ``zstd+tcp://``, sans I/O.

Between a message and its ZMTP frames, every part (a frame's body) goes through a
:class:`PartTransform`: a part in, a wire part out; a wire message in, the messages
it carries out, every declared size checked against a budget before anything is
allocated. The formats are omq.rs's (``omq-proto/src/proto/transform/``, its zstd
RFC, the 53/LZ4TCP draft) as pyomq 0.27 speaks them; where a document and pyomq
disagree, the peer decides (see ``docs/compression.md``).

Every post-handshake wire part begins with a 4-byte sentinel:

=============  =====================================================================
``00000000``   the plaintext follows (both formats)
``LZ4B``       lz4: an u64 little-endian decompressed size, then one LZ4 block
``28B52FFD``   zstd: the part *is* one Zstandard frame (its content size declared)
``LZ4D``       lz4: a dictionary shipment, ``LZ4D`` and 1 to 8192 bytes of dictionary
``37A430EC``   zstd: a dictionary shipment, the part being a Zstandard dictionary
               itself (its magic is the sentinel: pyomq's form; the RFC's, the magic
               before the dictionary, is read too), at most 64 KiB
``LZ4A``       a batch of whole messages (pyomq's "arena", in no document): a u32
``ZSTA``       flag (0 stored, 1 compressed), the u32 decompressed size, the u32
               count of messages, then the messages as plain ZMTP frames
=============  =====================================================================

Rules:

* A part is sent plain below a size (512 bytes; 32 for lz4 and 64 for zstd once a
  dictionary is shipped) and whenever compressing it saves nothing (the sentinel's
  4 bytes counted): compression only ever shrinks a part. trizmq sends no batches.
* A dictionary is shipped at most once per direction per connection, as a message
  of one part, before any part compressed with it; a second one, one in a message
  of several parts, an empty one or one over the format's limit is a
  :class:`ProtocolError`, as is an unknown sentinel, a truncated block or a part
  whose decompressed size differs from the size it declared.
* No declared size is trusted: the message's budget (``limit``, the payload bytes
  one message may carry) is charged with a part's declared size before its output
  is allocated; a Zstandard frame without a content size is decompressed with the
  budget left as its output bound (and a window no larger); a batch is bounded by
  :data:`ARENA_LIMIT` and by its count of messages times the budget.
* A zstd dictionary of ours is a real Zstandard dictionary (pyomq refuses raw
  content); with ``auto_train`` and none given, the first messages' small parts
  are sampled, a dictionary trained once (never again if that fails) and shipped in
  front of the next message (:meth:`PartTransform.encode`).

The compression libraries (``lz4``; ``compression.zstd``, or its backport
``backports.zstd`` before Python 3.14) are imported when a transform is first made,
so that the package imports without them: :func:`require` says what is missing.
"""

from __future__ import annotations

import importlib
import random
import struct
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeAlias

import attrs

from .errors import ProtocolError
from .frames import LONG, MORE

__all__ = [
    "ARENA_LIMIT",
    "DEFAULT_LIMIT",
    "FORMATS",
    "PLAIN",
    "CompressionFormat",
    "PartCounts",
    "PartTransform",
    "check_settings",
    "require",
]

Buffer: TypeAlias = bytes | bytearray | memoryview

#: the sentinel of a part sent as it is
PLAIN = b"\x00\x00\x00\x00"
#: the budget of a message's decompressed bytes where ``maxmsgsize`` sets none: a
#: compressed part declares its size, and a 10 KiB part may declare gigabytes
DEFAULT_LIMIT = 64 * 1024 * 1024
#: the most decompressed bytes one batch (``LZ4A``/``ZSTA``) may declare; pyomq's
#: batches are of small messages, ~16 KiB
ARENA_LIMIT = 1024 * 1024
#: the most messages one batch may declare (each takes 2 bytes at least)
_ARENA_COUNT_LIMIT = ARENA_LIMIT // 2

_LZ4B = b"LZ4B"
_LZ4D = b"LZ4D"
_LZ4A = b"LZ4A"
_ZSTD_FRAME = b"\x28\xb5\x2f\xfd"
_ZSTD_DICT = b"\x37\xa4\x30\xec"
_ZSTA = b"ZSTA"
_U64 = struct.Struct("<Q")
_ARENA_HEADER = struct.Struct("<III")
_LONG_SIZE = struct.Struct(">Q")

#: auto-training (the zstd RFC's section 6.5): samples are parts under this size...
_TRAIN_SAMPLE_BELOW = 1024
#: ...taken until there are this many, or this many bytes of them
_TRAIN_SAMPLES = 1000
_TRAIN_BYTES = 100 * 1024
#: the size of the dictionary trained
_TRAINED_SIZE = 8 * 1024
#: a trained dictionary's id is drawn from the user range
_USER_DICT_IDS = (32_768, (1 << 31) - 1)


@attrs.frozen(slots=True, kw_only=True)
class CompressionFormat:
    """What one scheme's parts look like: its sentinels, thresholds and limits (a
    row of :data:`FORMATS`; the library calls are :class:`PartTransform`'s)."""

    #: the scheme's compression ("lz4", "zstd")
    name: str
    #: the sentinels of a compressed part, a dictionary shipment and a batch
    compressed: bytes
    shipment: bytes
    arena: bytes
    #: parts under this many bytes go plain (without, and with, a dictionary)
    below: int
    below_with_dict: int
    #: the largest dictionary shipment's part (the sentinel included)
    max_dict: int
    #: the levels ``compression_level`` may name, and the level when it names none
    levels: tuple[int, int]
    default_level: int


#: the two schemes' formats, by scheme
FORMATS: dict[str, CompressionFormat] = {
    "lz4+tcp": CompressionFormat(
        name="lz4",
        compressed=_LZ4B,
        shipment=_LZ4D,
        arena=_LZ4A,
        below=512,
        below_with_dict=32,
        max_dict=4 + 8192,
        # 0: LZ4's default; 1-12: LZ4 HC at that level; below 0: the fast mode with
        # that acceleration
        levels=(-65537, 12),
        default_level=0,
    ),
    "zstd+tcp": CompressionFormat(
        name="zstd",
        compressed=_ZSTD_FRAME,
        shipment=_ZSTD_DICT,
        arena=_ZSTA,
        below=512,
        below_with_dict=64,
        max_dict=64 * 1024,
        levels=(-131072, 22),
        default_level=-3,
    ),
}


def _zstd_module() -> ModuleType:
    try:
        return importlib.import_module("compression.zstd")
    except ImportError:
        return importlib.import_module("backports.zstd")


def require(scheme: str) -> None:
    """Import the library ``scheme`` needs; ``ImportError`` naming the package that
    provides it (``pip install 'trizmq[compression]'``)."""
    package = "lz4" if scheme == "lz4+tcp" else "backports.zstd"
    try:
        if scheme == "lz4+tcp":
            importlib.import_module("lz4.block")
        else:
            _zstd_module()
    except ImportError as exc:
        raise ImportError(
            f"{scheme}:// needs the {package} package: pip install 'trizmq[compression]'"
        ) from exc


def check_settings(scheme: str, level: int | None, dictionary: bytes | None) -> None:
    """``ValueError`` naming the option when ``compression_level`` or
    ``compression_dict`` does not fit ``scheme``'s format (a zstd dictionary is also
    loaded, where the library is there, so that no codec made with it later fails)."""
    fmt = FORMATS[scheme]
    low, high = fmt.levels
    if level is not None and not low <= level <= high:
        raise ValueError(
            f"compression_level {level} is outside {fmt.name}'s levels ({low} to {high})"
        )
    if dictionary is None:
        return
    size = len(dictionary) + (4 if fmt.name == "lz4" else 0)
    if size > fmt.max_dict:
        raise ValueError(
            f"compression_dict of {len(dictionary)} bytes is over {fmt.name}'s limit "
            f"({fmt.max_dict - (4 if fmt.name == 'lz4' else 0)} bytes)"
        )
    if fmt.name == "zstd" and (len(dictionary) < 8 or dictionary[:4] != _ZSTD_DICT):
        raise ValueError(
            "compression_dict for zstd+tcp:// must be a Zstandard dictionary (one that "
            "starts with its magic 37 A4 30 EC, as compression.zstd.train_dict makes): "
            "omq.rs ships it as it is and refuses raw content"
        )
    if fmt.name == "zstd":
        try:
            zstd = _zstd_module()
        except ImportError:
            return  # require() says so where the scheme is used
        try:
            compressor = zstd.ZstdCompressor(zstd_dict=zstd.ZstdDict(dictionary))
            compressor.compress(b"probe" * 20, mode=zstd.ZstdCompressor.FLUSH_FRAME)
        except (ValueError, zstd.ZstdError) as exc:
            raise ValueError(
                f"compression_dict is not a usable Zstandard dictionary ({exc})"
            ) from None


class PartCounts:
    """What a connection's parts weighed: their payload bytes and their bytes on the
    wire (sentinels, compressed bodies, dictionary shipments), each way."""

    __slots__ = ("payload_received", "payload_sent", "wire_received", "wire_sent")

    def __init__(self) -> None:
        self.payload_sent = 0
        self.wire_sent = 0
        self.payload_received = 0
        self.wire_received = 0


class _Lz4:
    """The lz4 library's block calls, at one level."""

    def __init__(self, level: int) -> None:
        self._block: Any = importlib.import_module("lz4.block")
        self.error: type[Exception] = self._block.LZ4BlockError
        if level > 0:
            self._options: dict[str, Any] = {"mode": "high_compression", "compression": level}
        elif level < 0:
            self._options = {"mode": "fast", "acceleration": -level}
        else:
            self._options = {"mode": "default"}

    def compress(self, data: Buffer, dictionary: bytes | None) -> bytes:
        if dictionary is None:
            return bytes(self._block.compress(data, store_size=False, **self._options))
        return bytes(
            self._block.compress(data, store_size=False, dict=dictionary, **self._options)
        )

    def decompress(self, block: Buffer, size: int, dictionary: bytes | None) -> bytes:
        if dictionary is None:
            return bytes(self._block.decompress(block, uncompressed_size=size))
        return bytes(self._block.decompress(block, uncompressed_size=size, dict=dictionary))


class _Zstd:
    """The zstd library's calls, at one level."""

    def __init__(self, level: int) -> None:
        zstd = self._zstd = _zstd_module()
        self.error: type[Exception] = zstd.ZstdError
        self._level = level
        self._compressor: Any = zstd.ZstdCompressor(level=level)
        self._flush_frame = zstd.ZstdCompressor.FLUSH_FRAME
        self._window = zstd.DecompressionParameter.window_log_max
        self._send: Any = None
        self._receive: Any = None

    def dictionary(self, content: bytes) -> Any:
        """A dictionary object of ``content``; ``ValueError`` if it is not one."""
        return self._zstd.ZstdDict(content)

    def use_for_sending(self, content: bytes) -> None:
        self._send = self.dictionary(content)
        self._compressor = self._zstd.ZstdCompressor(level=self._level, zstd_dict=self._send)

    def use_for_receiving(self, content: bytes) -> None:
        self._receive = self.dictionary(content)

    def compress(self, data: Buffer) -> bytes:
        # one call with FLUSH_FRAME knows the whole input: the frame declares its
        # content size, which the zstd RFC requires (omq.rs refuses a frame without)
        out: bytes = self._compressor.compress(data, mode=self._flush_frame)
        return out

    def content_size(self, frame: Buffer) -> int | None:
        """The content size the frame's header declares (None: it declares none);
        ``ZstdError`` for a header that is not one."""
        size: int | None = self._zstd.get_frame_info(frame).decompressed_size
        return size

    def decompress(self, frame: Buffer, bound: int) -> tuple[bytes, bool, bool]:
        """At most ``bound`` bytes of the frame, with a window no larger than needed
        for them: (output, the frame ended, bytes followed it)."""
        window = max(10, min(31, (bound - 2).bit_length()))
        decompressor = self._zstd.ZstdDecompressor(
            zstd_dict=self._receive, options={self._window: window}
        )
        out: bytes = decompressor.decompress(frame, max_length=bound)
        return out, decompressor.eof, bool(decompressor.unused_data)

    def train(self, samples: list[bytes]) -> bytes | None:
        """A dictionary trained from ``samples``, its id drawn from the user range;
        None when training fails (samples too few or too alike)."""
        try:
            trained = self._zstd.train_dict(samples, _TRAINED_SIZE)
        except (self._zstd.ZstdError, ValueError):
            return None
        content = bytearray(trained.dict_content)
        if content[:4] != _ZSTD_DICT or len(content) < 8:
            return None
        content[4:8] = random.randint(*_USER_DICT_IDS).to_bytes(4, "little")
        return bytes(content)


def _window_size(frame: bytes) -> int:
    """The window a Zstandard frame's header asks for (RFC 8878, 3.1.1.1.2): what a
    decoder allocates for a frame that declares no content size."""
    if len(frame) < 6:
        return 0  # the library says what is wrong with it
    descriptor = frame[4]
    if descriptor & 0x20:  # single segment: the window is the content, declared
        return 0
    exponent, mantissa = frame[5] >> 3, frame[5] & 7
    base = 1 << (10 + exponent)
    return base + (base >> 3) * mantissa


class PartTransform:
    """One connection's part transform: its dictionaries (one each way), the budget
    of each message received, and what its parts weighed (:attr:`counts`).

    ``scheme`` is ``"lz4+tcp"`` or ``"zstd+tcp"``; ``level`` the compression level
    (None: the format's); ``dictionary`` ours to ship (checked by
    :func:`check_settings`); ``auto_train`` (zstd, without a dictionary) trains one
    from the first messages; ``limit`` the decompressed bytes one message may carry
    (-1: :data:`DEFAULT_LIMIT`); ``max_frames`` the frames one message of a batch
    may have (-1: no bound). Raises ``ValueError`` for settings that do not fit and
    ``ImportError`` for a library that is missing.
    """

    def __init__(
        self,
        scheme: str,
        *,
        level: int | None = None,
        dictionary: bytes | None = None,
        auto_train: bool = False,
        limit: int = -1,
        max_frames: int = -1,
    ) -> None:
        check_settings(scheme, level, dictionary)
        require(scheme)
        fmt = self.format = FORMATS[scheme]
        chosen = fmt.default_level if level is None else level
        self._lz4 = _Lz4(chosen) if fmt.name == "lz4" else None
        self._zstd = _Zstd(chosen) if fmt.name == "zstd" else None
        #: the decompressed bytes one message may carry
        self.limit = limit if limit >= 0 else DEFAULT_LIMIT
        self._max_frames = max_frames if max_frames > 0 else 1 << 62
        self.counts = PartCounts()
        #: our dictionary, and its shipment (the wire part), once we have one
        self._send_dict: bytes | None = None
        self._shipment: bytes | None = None
        #: the shipment waits to go out in front of the next message: a dictionary
        #: given (unless :meth:`shipment` took it first) or just trained
        self._ship_next = False
        #: the message the shipment went out in front of: if its encoding is made
        #: again, the first was not written (a write that the kernel refused), and
        #: the shipment goes with it again (see :meth:`encode`)
        self._anchor: object = None
        #: the peer's dictionary, once it shipped one
        self._receive_dict: bytes | None = None
        self._received_dict = False
        #: auto-training: the samples so far and their bytes (None: not training)
        self._samples: list[bytes] | None = None
        self._sampled = 0
        self._below = fmt.below
        if dictionary is not None:
            self._install(bytes(dictionary))
            self._ship_next = True
        elif auto_train and fmt.name == "zstd":
            self._samples = []
        #: the sentinel handlers, by sentinel
        self._decoders: dict[bytes, Callable[[bytes, list[int]], bytes]] = {
            PLAIN: self._plain_part,
            fmt.compressed: self._lz4_part if self._lz4 is not None else self._zstd_part,
        }

    # -- our dictionary ------------------------------------------------------------------
    def _install(self, dictionary: bytes) -> None:
        if self._zstd is not None:
            self._zstd.use_for_sending(dictionary)
            self._shipment = dictionary
        else:
            self._shipment = _LZ4D + dictionary
        self._send_dict = dictionary
        self._below = self.format.below_with_dict

    @property
    def dictionary(self) -> bytes | None:
        """Our dictionary (given, or trained), if we have one."""
        return self._send_dict

    @property
    def peer_dictionary(self) -> bytes | None:
        """The dictionary the peer shipped, if it shipped one."""
        return self._receive_dict

    @property
    def training(self) -> bool:
        """True while the first messages are sampled for a dictionary."""
        return self._samples is not None

    def shipment(self) -> bytes | None:
        """The shipment of a dictionary given at the start, to send once as a
        message of its own before any other (None: none, or taken already); the
        codec sends it as the handshake ends. Not taken, it goes in front of the
        first message :meth:`encode` encodes."""
        if not self._ship_next or self._shipment is None:
            return None
        self._ship_next = False
        self.counts.wire_sent += len(self._shipment)
        return self._shipment

    # -- parts out -------------------------------------------------------------------------
    def encode(self, frames: Sequence[Buffer]) -> tuple[bytes | None, list[bytes]]:
        """The wire parts of one message, and a dictionary shipment to send as a
        message of its own in front of it (None: none).

        A shipment goes in front of the first message encoded after a dictionary
        was trained, and again in front of that same message (the same object) if
        it is encoded again: the writer encodes a message again only when the
        first encoding was never written, so the peer sees one shipment, before the
        first part compressed with it.
        """
        counts = self.counts
        if self._samples is not None:
            self._sample(frames)
        shipment: bytes | None = None
        if self._ship_next:
            self._ship_next = False
            self._anchor = frames
            shipment = self._shipment
        elif self._anchor is frames:
            shipment = self._shipment
        if shipment is not None:
            counts.wire_sent += len(shipment)
        wire = [self._encode_part(part) for part in frames]
        counts.payload_sent += sum(map(len, frames))
        counts.wire_sent += sum(map(len, wire))
        return shipment, wire

    def _encode_part(self, part: Buffer) -> bytes:
        size = len(part)
        if size < self._below:
            return PLAIN + part
        try:
            if self._lz4 is not None:
                block = self._lz4.compress(part, self._send_dict)
                if len(block) + 12 < size + 4:
                    return _LZ4B + _U64.pack(size) + block
                return PLAIN + part
            assert self._zstd is not None
            frame = self._zstd.compress(part)
        except Exception:  # the library refused (its memory, a part past its limits)
            return PLAIN + part  # the plain form is always valid
        if len(frame) < size - 4:
            return frame
        return PLAIN + part

    def _sample(self, frames: Sequence[Buffer]) -> None:
        """Auto-training: keep the message's small parts; train once there are
        enough (then the dictionary waits to be shipped)."""
        samples = self._samples
        assert samples is not None and self._zstd is not None
        for part in frames:
            if len(part) < _TRAIN_SAMPLE_BELOW:
                samples.append(bytes(part))
                self._sampled += len(part)
        if len(samples) < _TRAIN_SAMPLES and self._sampled < _TRAIN_BYTES:
            return
        self._samples = None
        trained = self._zstd.train(samples)
        if trained is not None and len(trained) <= self.format.max_dict:
            self._install(trained)
            self._ship_next = True

    # -- messages in -----------------------------------------------------------------------
    def decode(self, parts: Sequence[bytes]) -> list[list[bytes]]:
        """The messages one wire message carries: itself decoded, none (it shipped
        a dictionary) or several (a batch). ``ProtocolError`` for a part that breaks
        the format, or a message over the budget (cause ``"limit"``)."""
        counts = self.counts
        counts.wire_received += sum(map(len, parts))
        if len(parts) == 1:
            part = parts[0]
            sentinel = part[:4]
            if sentinel == self.format.shipment:
                self._take_dictionary(part)
                return []
            if sentinel == self.format.arena:
                messages = self._arena(part)
                counts.payload_received += sum([sum(map(len, m)) for m in messages])
                return messages
        budget = [self.limit]
        decoders = self._decoders
        out: list[bytes] = []
        for part in parts:
            decoder = decoders.get(part[:4])
            if decoder is None:
                raise self._unknown(part, len(parts) > 1)
            out.append(decoder(part, budget))
        counts.payload_received += self.limit - budget[0]
        return [out]

    def _unknown(self, part: bytes, multipart: bool) -> ProtocolError:
        sentinel = part[:4]
        if len(part) < 4:
            return ProtocolError(f"a {self.format.name} part of {len(part)} bytes has no sentinel")
        if multipart and sentinel in (self.format.shipment, self.format.arena):
            kind = "dictionary shipment" if sentinel == self.format.shipment else "batch"
            return ProtocolError(f"a {self.format.name} {kind} in a message of several parts")
        return ProtocolError(f"unknown {self.format.name} sentinel {sentinel.hex(' ')}")

    def _charge(self, budget: list[int], size: int) -> None:
        if size > budget[0]:
            raise ProtocolError(
                f"a {self.format.name} message of at least {self.limit - budget[0] + size} "
                f"decompressed bytes exceeds the {self.limit}-byte limit",
                cause="limit",
            )
        budget[0] -= size

    def _plain_part(self, part: bytes, budget: list[int]) -> bytes:
        self._charge(budget, len(part) - 4)
        return part[4:]

    def _lz4_part(self, part: bytes, budget: list[int]) -> bytes:
        assert self._lz4 is not None
        if len(part) < 12:
            raise ProtocolError("an LZ4B part shorter than its declared-size header")
        (size,) = _U64.unpack_from(part, 4)
        self._charge(budget, size)  # before the output is allocated
        return self._lz4_block(memoryview(part)[12:], size)

    def _lz4_block(self, block: Buffer, size: int) -> bytes:
        assert self._lz4 is not None
        try:
            out = self._lz4.decompress(block, size, self._receive_dict)
        except (self._lz4.error, ValueError, OverflowError, MemoryError) as exc:
            raise ProtocolError(f"a malformed LZ4 block ({exc})") from None
        if len(out) != size:
            raise ProtocolError(
                f"an LZ4 block declaring {size} bytes decompressed to {len(out)}"
            )
        return out

    def _zstd_part(self, part: bytes, budget: list[int]) -> bytes:
        zstd = self._zstd
        assert zstd is not None
        try:
            declared = zstd.content_size(part)
        except (zstd.error, ValueError) as exc:
            raise ProtocolError(f"a malformed Zstandard frame header ({exc})") from None
        if declared is not None:
            self._charge(budget, declared)  # before the output is allocated
            bound = declared
        else:
            bound = budget[0]  # no size declared: what the budget has left bounds it
            window = _window_size(part)
            if window > max(bound, 1024):
                raise ProtocolError(
                    f"a Zstandard frame's window of {window} bytes exceeds the {bound} "
                    "bytes its message may still carry",
                    cause="limit",
                )
        try:
            # one byte more than the bound: a frame that would go past it says so
            out, ended, trailing = zstd.decompress(part, bound + 1)
        except (zstd.error, ValueError, MemoryError) as exc:
            raise ProtocolError(f"a malformed Zstandard frame ({exc})") from None
        if len(out) > bound:
            if declared is None:
                self._charge(budget, len(out))  # raises: over the budget
            raise ProtocolError(f"a Zstandard frame decompressing past its declared {bound} bytes")
        if declared is None:
            self._charge(budget, len(out))
        if not ended:
            raise ProtocolError("a truncated Zstandard frame")
        if trailing:
            raise ProtocolError("bytes after the Zstandard frame of a part")
        if declared is not None and len(out) != declared:
            raise ProtocolError(
                f"a Zstandard frame declaring {declared} bytes decompressed to {len(out)}"
            )
        return out

    def _take_dictionary(self, part: bytes) -> None:
        """The peer's dictionary shipment (a message of one part)."""
        fmt = self.format
        if self._received_dict:
            raise ProtocolError(f"a second {fmt.name} dictionary on one connection")
        if len(part) > fmt.max_dict:
            raise ProtocolError(
                f"a {fmt.name} dictionary shipment of {len(part)} bytes is over the "
                f"{fmt.max_dict}-byte limit"
            )
        # lz4's follows its sentinel; pyomq ships a zstd dictionary as it is (its magic
        # is the sentinel), the zstd RFC puts the sentinel in front of it
        lz4 = fmt.name == "lz4"
        content = part[4:] if lz4 or part[4:8] == _ZSTD_DICT else part
        if not content:
            raise ProtocolError(f"an empty {fmt.name} dictionary")
        if self._zstd is not None:
            try:
                self._zstd.use_for_receiving(content)
            except (self._zstd.error, ValueError) as exc:
                raise ProtocolError(f"a malformed Zstandard dictionary ({exc})") from None
        self._received_dict = True
        self._receive_dict = content

    def _arena(self, part: bytes) -> list[list[bytes]]:
        """A batch of whole messages (pyomq's ``LZ4A``/``ZSTA``)."""
        name = self.format.name
        if len(part) < 16:
            raise ProtocolError(f"a {name} batch shorter than its header")
        flag, size, count = _ARENA_HEADER.unpack_from(part, 4)
        if flag > 1:
            raise ProtocolError(f"a {name} batch with the unknown flag {flag}")
        if not 1 <= count <= _ARENA_COUNT_LIMIT:
            raise ProtocolError(f"a {name} batch of {count} messages")
        bound = min(ARENA_LIMIT, count * (self.limit + 64))
        if size > bound:
            raise ProtocolError(
                f"a {name} batch declaring {size} bytes exceeds its {bound}-byte limit",
                cause="limit",
            )
        body: bytes
        if not flag:
            body = part[16:]
            if len(body) != size:
                raise ProtocolError(f"a stored {name} batch of {len(body)} bytes declared {size}")
        elif self._lz4 is not None:
            body = self._lz4_block(memoryview(part)[16:], size)
        else:
            body = self._zstd_part(part[16:], [size])
            if len(body) != size:
                raise ProtocolError(f"a zstd batch of {len(body)} bytes declared {size}")
        return self._split_arena(body, count)

    def _split_arena(self, body: bytes, count: int) -> list[list[bytes]]:
        """A batch's messages, from their ZMTP frames (no commands, no sentinels)."""
        messages: list[list[bytes]] = []
        frames: list[bytes] = []
        used = 0
        pos, end = 0, len(body)
        while pos < end:
            flags = body[pos]
            if flags & ~(MORE | LONG):
                raise ProtocolError(f"a batched frame with the flags 0x{flags:02x}")
            if flags & LONG:
                if end - pos < 9:
                    raise ProtocolError("a batched frame cut in its header")
                (size,) = _LONG_SIZE.unpack_from(body, pos + 1)
                pos += 9
            else:
                if end - pos < 2:
                    raise ProtocolError("a batched frame cut in its header")
                size = body[pos + 1]
                pos += 2
            if size > end - pos:
                raise ProtocolError("a batched frame cut in its body")
            used += size
            if used > self.limit or len(frames) >= self._max_frames:
                raise ProtocolError(
                    f"a batched message over the {self.limit}-byte limit or of too many frames",
                    cause="limit",
                )
            frames.append(body[pos : pos + size])
            pos += size
            if not flags & MORE:
                messages.append(frames)
                frames = []
                used = 0
        if frames or len(messages) != count:
            raise ProtocolError(
                f"a {self.format.name} batch declaring {count} messages holds "
                f"{len(messages)}{' and a message cut short' if frames else ''}"
            )
        return messages
