"""The part transform of lz4+tcp:// and zstd+tcp://, with byte strings only.

pyomq's own wire messages (``omq_vectors``) decode to what it sent; what trizmq
encodes decodes back and follows the formats' rules (sentinels, thresholds, the
content size, one dictionary shipment before its use); every hostile part is a
``ProtocolError`` raised before an allocation beyond the message's budget.
"""

from __future__ import annotations

import importlib
import random
import struct
import tracemalloc
from typing import Any

import pytest

from trizmq.zmtp import ProtocolError
from trizmq.zmtp.compression import (
    ARENA_LIMIT,
    DEFAULT_LIMIT,
    PLAIN,
    PartTransform,
    check_settings,
)

from .omq_vectors import CAPTURES, LZ4_DICT, RECORDS, TEXT, ZSTD_DICT

SCHEMES = ["lz4+tcp", "zstd+tcp"]
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
NOISE = random.Random(1).randbytes(4000)


def _zstd() -> Any:
    try:
        return importlib.import_module("compression.zstd")
    except ImportError:
        return importlib.import_module("backports.zstd")


def _decode_all(transform: PartTransform, wire: list[list[bytes]]) -> list[list[bytes]]:
    out: list[list[bytes]] = []
    for message in wire:
        out += transform.decode(message)
    return out


def _capture(name: str) -> list[list[bytes]]:
    return [[bytes.fromhex(part) for part in message] for message in CAPTURES[name]]


def _roundtrip(
    sender: PartTransform, receiver: PartTransform, messages: list[list[bytes]]
) -> list[list[bytes]]:
    out: list[list[bytes]] = []
    for frames in messages:
        shipment, wire = sender.encode(frames)
        if shipment is not None:
            assert receiver.decode([shipment]) == []
        out += receiver.decode(wire)
    return out


# -- what pyomq sent --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["lz4", "zstd"])
def test_pyomq_parts_decode(name: str) -> None:
    wire = _capture(f"{name} parts")
    sentinels = [part[:4] for message in wire for part in message]
    assert sentinels[1] == (b"LZ4B" if name == "lz4" else ZSTD_MAGIC)
    transform = PartTransform(f"{name}+tcp")
    assert _decode_all(transform, wire) == [[b"hi"], [TEXT], [b"a", TEXT, b""]]
    counts = transform.counts
    assert counts.payload_received == 2 + 880 + 1 + 880
    assert counts.wire_received == sum(len(p) for m in wire for p in m)


@pytest.mark.parametrize("name", ["lz4", "zstd"])
def test_pyomq_batch_decodes_to_its_messages(name: str) -> None:
    wire = _capture(f"{name} batch")
    assert wire[-1][0][:4] == (b"LZ4A" if name == "lz4" else b"ZSTA")
    transform = PartTransform(f"{name}+tcp")
    expected = [[b"m%d" % i, TEXT[: 40 * i]] for i in range(12)]
    assert _decode_all(transform, wire) == expected
    assert transform.counts.payload_received == sum(len(p) for m in expected for p in m)


def test_pyomq_lz4_dictionary() -> None:
    wire = _capture("lz4 dict")
    assert wire[0] == [b"LZ4D" + LZ4_DICT]
    transform = PartTransform("lz4+tcp")
    assert _decode_all(transform, wire) == [[TEXT[:100]], [TEXT[:100]]]
    assert transform.peer_dictionary == LZ4_DICT


def test_pyomq_zstd_dictionary_is_shipped_as_it_is() -> None:
    wire = _capture("zstd dict")
    assert wire[0] == [ZSTD_DICT]  # no sentinel in front: its magic is one
    transform = PartTransform("zstd+tcp")
    assert _decode_all(transform, wire) == [
        [RECORDS[0] + RECORDS[1]],
        [RECORDS[2] + RECORDS[3]],
    ]
    assert transform.peer_dictionary == ZSTD_DICT


def test_the_rfc_form_of_a_zstd_shipment_is_read_too() -> None:
    transform = PartTransform("zstd+tcp")
    assert transform.decode([b"\x37\xa4\x30\xec" + ZSTD_DICT]) == []
    assert transform.peer_dictionary == ZSTD_DICT
    frame = _capture("zstd dict")[1]
    assert transform.decode(frame) == [[RECORDS[0] + RECORDS[1]]]


def test_a_stored_batch() -> None:
    body = b"\x01\x02ab\x00\x03cde" + b"\x02" + struct.pack(">Q", 300) + b"x" * 300
    part = b"ZSTA" + struct.pack("<III", 0, len(body), 2) + body
    assert PartTransform("zstd+tcp").decode([part]) == [[b"ab", b"cde"], [b"x" * 300]]
    lz4 = b"LZ4A" + part[4:]
    assert PartTransform("lz4+tcp").decode([lz4]) == [[b"ab", b"cde"], [b"x" * 300]]


# -- what trizmq sends --------------------------------------------------------------------


@pytest.mark.parametrize("scheme", SCHEMES)
def test_parts_are_compressed_only_when_it_saves(scheme: str) -> None:
    sender = PartTransform(scheme)
    shipment, wire = sender.encode([b"hi", TEXT, NOISE, b"", ZSTD_MAGIC + b"x" * 20])
    assert shipment is None
    assert wire[0] == PLAIN + b"hi"
    compressed = b"LZ4B" if scheme == "lz4+tcp" else ZSTD_MAGIC
    assert wire[1][:4] == compressed and len(wire[1]) < 200
    assert wire[2] == PLAIN + NOISE  # incompressible: plain
    assert wire[3] == PLAIN
    assert wire[4] == PLAIN + ZSTD_MAGIC + b"x" * 20  # a sentinel in the data: plain
    receiver = PartTransform(scheme)
    assert receiver.decode(wire) == [[b"hi", TEXT, NOISE, b"", ZSTD_MAGIC + b"x" * 20]]
    counts = sender.counts
    assert counts.payload_sent == 2 + 880 + 4000 + 0 + 24
    assert counts.wire_sent == sum(map(len, wire))


def test_below_the_threshold_a_part_goes_plain() -> None:
    for scheme in SCHEMES:
        _, wire = PartTransform(scheme).encode([b"a" * 511])
        assert wire == [PLAIN + b"a" * 511]
        _, wire = PartTransform(scheme).encode([b"a" * 512])
        assert wire[0][:4] != PLAIN


def test_zstd_frames_declare_their_content_size() -> None:
    _, wire = PartTransform("zstd+tcp").encode([TEXT])
    assert _zstd().get_frame_info(wire[0]).decompressed_size == len(TEXT)


def test_lz4_declares_its_size() -> None:
    _, wire = PartTransform("lz4+tcp").encode([TEXT])
    assert wire[0][:4] == b"LZ4B"
    assert struct.unpack_from("<Q", wire[0], 4)[0] == len(TEXT)


@pytest.mark.parametrize(("scheme", "level"), [("lz4+tcp", 9), ("lz4+tcp", -8), ("zstd+tcp", 19)])
def test_levels(scheme: str, level: int) -> None:
    sender = PartTransform(scheme, level=level)
    messages = [[TEXT], [TEXT[::-1] * 3]]
    assert _roundtrip(sender, PartTransform(scheme), messages) == messages


@pytest.mark.parametrize(("scheme", "dictionary"), [("lz4+tcp", LZ4_DICT), ("zstd+tcp", ZSTD_DICT)])
def test_a_dictionary_is_shipped_once_before_its_first_use(scheme: str, dictionary: bytes) -> None:
    sender = PartTransform(scheme, dictionary=dictionary)
    shipment = sender.shipment()
    assert shipment == (b"LZ4D" + dictionary if scheme == "lz4+tcp" else dictionary)
    assert sender.shipment() is None
    record = RECORDS[0] if scheme == "zstd+tcp" else LZ4_DICT
    frames = [record + record[:30]]
    again, wire = sender.encode(frames)
    assert again is None
    assert wire[0][:4] != PLAIN  # small, and compressed: the dictionary pays
    receiver = PartTransform(scheme)
    assert receiver.decode([shipment]) == []
    assert receiver.decode(wire) == [frames]
    assert sender.counts.wire_sent == len(shipment) + len(wire[0])


def test_a_shipment_not_taken_goes_in_front_of_the_first_message() -> None:
    sender = PartTransform("lz4+tcp", dictionary=LZ4_DICT)
    shipment, _ = sender.encode([b"x"])
    assert shipment == b"LZ4D" + LZ4_DICT
    assert sender.encode([b"y"])[0] is None


def test_an_encoding_made_again_carries_its_shipment_again() -> None:
    # a write-through whose write the kernel refused leaves the message queued: the
    # writer encodes that same message again, and the shipment must go with it
    sender = PartTransform("lz4+tcp", dictionary=LZ4_DICT)
    frames = [TEXT]
    first, wire = sender.encode(frames)
    again, wire_again = sender.encode(frames)
    assert first == again == b"LZ4D" + LZ4_DICT
    assert wire == wire_again
    assert sender.encode([TEXT])[0] is None  # another message: shipped already
    receiver = PartTransform("lz4+tcp")
    assert _decode_all(receiver, [[again], wire_again]) == [frames]


def test_auto_training_trains_once_and_ships_the_dictionary() -> None:
    rng = random.Random(4)
    records = [
        b'{"sensor": %d, "temp": %d.%d, "unit": "celsius", "status": "ok"}'
        % (rng.randrange(50), rng.randrange(40), rng.randrange(10))
        for _ in range(1100)
    ]
    sender = PartTransform("zstd+tcp", auto_train=True)
    receiver = PartTransform("zstd+tcp")
    shipments = 0
    out: list[list[bytes]] = []
    for record in records:
        shipment, wire = sender.encode([record])
        if shipment is not None:
            shipments += 1
            assert receiver.decode([shipment]) == []
        out += receiver.decode(wire)
    assert out == [[r] for r in records]
    assert shipments == 1
    trained = sender.dictionary
    assert trained is not None and trained[:4] == b"\x37\xa4\x30\xec"
    assert 32_768 <= int.from_bytes(trained[4:8], "little") < 1 << 31
    assert receiver.peer_dictionary == trained
    assert not sender.training
    # with the dictionary, a record compresses (the plain form is 4 bytes longer)
    _, wire = sender.encode([records[0] * 2])
    assert wire[0][:4] == ZSTD_MAGIC and len(wire[0]) < len(records[0])


def test_failed_training_is_not_retried() -> None:
    sender = PartTransform("zstd+tcp", auto_train=True)
    for _ in range(1000):
        shipment, _ = sender.encode([b""])  # nothing to learn from
        assert shipment is None
    assert not sender.training and sender.dictionary is None
    assert sender.encode([b"x" * 600])[0] is None


def test_auto_train_is_for_zstd_and_without_a_dictionary() -> None:
    assert not PartTransform("lz4+tcp", auto_train=True).training
    assert not PartTransform("zstd+tcp", auto_train=True, dictionary=ZSTD_DICT).training


def test_settings_are_checked() -> None:
    check_settings("lz4+tcp", 12, b"x" * 8192)
    with pytest.raises(ValueError, match="compression_level 13"):
        check_settings("lz4+tcp", 13, None)
    with pytest.raises(ValueError, match="compression_dict of 8193 bytes"):
        check_settings("lz4+tcp", None, b"x" * 8193)
    with pytest.raises(ValueError, match="Zstandard dictionary"):
        check_settings("zstd+tcp", None, b"raw content")
    with pytest.raises(ValueError, match="compression_level 23"):
        PartTransform("zstd+tcp", level=23)
    # a dictionary that has the magic but no usable tables: refused before any codec
    with pytest.raises(ValueError, match="not a usable Zstandard dictionary"):
        check_settings("zstd+tcp", None, b"\x37\xa4\x30\xec" + b"\x01" * 100)


# -- hostile parts ------------------------------------------------------------------------


def _refused(scheme: str, parts: list[bytes], match: str, **kw: object) -> ProtocolError:
    transform = PartTransform(scheme, **kw)  # type: ignore[arg-type]
    with pytest.raises(ProtocolError, match=match) as caught:
        transform.decode(parts)
    return caught.value


@pytest.mark.parametrize("scheme", SCHEMES)
def test_unknown_and_missing_sentinels(scheme: str) -> None:
    _refused(scheme, [b"NOPE-payload"], "unknown .* sentinel 4e 4f 50 45")
    _refused(scheme, [b"\x00\x00\x00"], "of 3 bytes has no sentinel")
    other = b"LZ4B" if scheme == "zstd+tcp" else ZSTD_MAGIC
    _refused(scheme, [other + b"\x00" * 20], "unknown")


@pytest.mark.parametrize(
    ("scheme", "shipment"),
    [("lz4+tcp", b"LZ4D" + LZ4_DICT), ("zstd+tcp", ZSTD_DICT)],
)
def test_dictionary_rules(scheme: str, shipment: bytes) -> None:
    transform = PartTransform(scheme)
    assert transform.decode([shipment]) == []
    with pytest.raises(ProtocolError, match="second"):
        transform.decode([shipment])
    _refused(scheme, [PLAIN + b"a", shipment], "dictionary shipment in a message of several")
    _refused(scheme, [shipment[:4]], "empty|malformed")


def test_dictionaries_over_their_limit() -> None:
    _refused("lz4+tcp", [b"LZ4D" + b"d" * 8193], "over the 8196-byte limit")
    _refused("zstd+tcp", [b"\x37\xa4\x30\xec" + b"d" * 65533], "over the 65536-byte limit")
    _refused("zstd+tcp", [b"\x37\xa4\x30\xec\x01"], "malformed Zstandard dictionary")


def test_lz4_blocks() -> None:
    _refused("lz4+tcp", [b"LZ4B\x10\x00"], "shorter than its declared-size header")
    huge = b"LZ4B" + struct.pack("<Q", 1 << 62) + b"\x00" * 8
    error = _refused("lz4+tcp", [huge], "exceeds the 1000-byte limit", limit=1000)
    assert error.cause == "limit"
    _, wire = PartTransform("lz4+tcp").encode([TEXT])
    _refused("lz4+tcp", [wire[0][:-5]], "malformed LZ4 block")  # truncated
    lying = b"LZ4B" + struct.pack("<Q", len(TEXT) + 100) + wire[0][12:]
    _refused("lz4+tcp", [lying], "declaring 980 bytes decompressed to 880")
    _refused("lz4+tcp", [b"LZ4B" + struct.pack("<Q", 50) + b"\xff" * 20], "malformed LZ4")


def test_the_budget_is_the_whole_messages() -> None:
    _, wire = PartTransform("lz4+tcp").encode([TEXT, TEXT])
    assert PartTransform("lz4+tcp", limit=1760).decode(wire) == [[TEXT, TEXT]]
    error = _refused("lz4+tcp", wire, "at least 1760 decompressed bytes exceeds", limit=1759)
    assert error.cause == "limit"
    _refused("zstd+tcp", [PLAIN + b"x" * 11], "exceeds the 10-byte limit", limit=10)
    assert PartTransform("zstd+tcp").limit == DEFAULT_LIMIT


def test_zstd_frames() -> None:
    zstd = _zstd()
    declared = zstd.compress(b"z" * 100_000)
    error = _refused("zstd+tcp", [declared], "exceeds the 50000-byte limit", limit=50_000)
    assert error.cause == "limit"
    _refused("zstd+tcp", [declared[:-6]], "truncated|malformed")
    _refused("zstd+tcp", [declared + b"tail"], "bytes after the Zstandard frame")
    _refused("zstd+tcp", [ZSTD_MAGIC + b"\xff" * 10], "malformed Zstandard frame header")
    # a frame without a content size is read (within the budget), as the issue asks
    frame = zstd.compress(b"q" * 5000, options={zstd.CompressionParameter.content_size_flag: 0})
    assert zstd.get_frame_info(frame).decompressed_size is None
    assert PartTransform("zstd+tcp").decode([frame]) == [[b"q" * 5000]]


def test_a_zstd_frame_without_its_size_is_bounded_by_the_budget() -> None:
    zstd = _zstd()
    sizeless = {zstd.CompressionParameter.content_size_flag: 0}
    bomb = zstd.compress(
        b"\x00" * (256 * 1024 * 1024),
        options={**sizeless, zstd.CompressionParameter.window_log: 20},
    )
    assert len(bomb) < 64 * 1024
    limit = 1024 * 1024
    wide = zstd.compress(
        b"\x00" * (4 * limit), options={**sizeless, zstd.CompressionParameter.window_log: 27}
    )
    tracemalloc.start()
    try:
        error = _refused("zstd+tcp", [bomb], "exceeds the 1048576-byte limit", limit=limit)
        # a window over the budget is not allocated: the frame is refused
        error_wide = _refused("zstd+tcp", [wide], "window of 4194304 bytes", limit=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert error.cause == error_wide.cause == "limit"
    assert peak < 4 * limit  # the output stopped at its bound, not at 256 MiB


def test_a_declared_size_is_charged_before_any_allocation() -> None:
    zstd = _zstd()
    frame = zstd.compress(b"\x00" * (64 * 1024 * 1024))
    lz4 = b"LZ4B" + struct.pack("<Q", 64 * 1024 * 1024) + b"\x1f\x00" + b"\x00" * 10
    tracemalloc.start()
    try:
        _refused("zstd+tcp", [frame], "limit", limit=1024 * 1024)
        _refused("lz4+tcp", [lz4], "limit", limit=1024 * 1024)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024


@pytest.mark.parametrize("scheme", SCHEMES)
def test_batches(scheme: str) -> None:
    tag = b"LZ4A" if scheme == "lz4+tcp" else b"ZSTA"

    def batch(body: bytes, *, flag: int = 0, size: int | None = None, count: int = 1) -> bytes:
        size = len(body) if size is None else size
        return tag + struct.pack("<III", flag, size, count) + body

    assert PartTransform(scheme).decode([batch(b"\x00\x02hi")]) == [[b"hi"]]
    _refused(scheme, [tag + b"\x00" * 8], "shorter than its header")
    _refused(scheme, [batch(b"\x00\x02hi", flag=2)], "unknown flag 2")
    _refused(scheme, [batch(b"\x00\x02hi", count=0)], "batch of 0 messages")
    _refused(scheme, [batch(b"", size=ARENA_LIMIT + 1, count=1000)], "limit")
    _refused(scheme, [batch(b"\x00\x02hi", size=5, count=1)], "stored")
    _refused(scheme, [batch(b"\x00\x02hi", count=2)], "declaring 2 messages holds 1")
    _refused(scheme, [batch(b"\x04\x02hi")], "flags 0x04")
    _refused(scheme, [batch(b"\x01\x02hi")], "cut short")
    _refused(scheme, [batch(b"\x00\x09hi")], "cut in its body")
    _refused(scheme, [batch(b"\x02\x00\x00")], "cut in its header")
    error = _refused(scheme, [batch(b"\x00\x05hello")], "limit", limit=4)
    assert error.cause == "limit"
    _refused(scheme, [PLAIN, batch(b"\x00\x02hi")], "batch in a message of several")
    _refused(scheme, [batch(b"\x00" * 20, flag=1, size=20)], "malformed")
