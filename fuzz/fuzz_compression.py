"""Fuzz the compressed transports' decoder: bytes from libFuzzer, as wire parts.

Run: ``python fuzz/fuzz_compression.py -runs=100000`` (any libFuzzer flag works).

The input chooses a scheme (lz4+tcp, zstd+tcp), a budget (a small ``maxmsgsize``
or none), whether the peer shipped a dictionary already, and a mode:

* raw: the rest of the input, cut into one to four parts, is one wire message for
  :meth:`PartTransform.decode`;
* shaped: a part built around a real sentinel (a plain part, an LZ4 block or a
  Zstandard frame of fuzzed content, a dictionary shipment, a batch with fuzzed
  header fields), its bytes then flipped or cut where the input says;
* codec: a :class:`CompressedConnection` past its handshake reads ZMTP frames whose
  bodies are fuzzed parts, the bytes whole and in pieces;
* roundtrip: the input's bytes, as a message of parts, encoded by one transform
  (level, dictionary and training from the input) and decoded by another.

Invariants: the only exception ever raised is :class:`ProtocolError`; a message
decoded carries no more payload than the budget; delivering the bytes in pieces
gives the same messages as delivering them at once (or both fail); a roundtrip
gives back what was sent. Anything else is a crash libFuzzer reports with its input.
"""

from __future__ import annotations

import importlib
import itertools
import struct
import sys
from pathlib import Path
from typing import Any

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with atheris.instrument_imports(include=["trizmq.zmtp"]):
    from trizmq.zmtp import Connection, ProtocolError, Received
    from trizmq.zmtp.compressed import CompressedConnection, wire_limit
    from trizmq.zmtp.compression import PartTransform

try:
    zstd: Any = importlib.import_module("compression.zstd")
except ImportError:
    zstd = importlib.import_module("backports.zstd")
lz4: Any = importlib.import_module("lz4.block")

from trizmq.patterns.sockets import socket_type  # noqa: E402

SCHEMES = ("lz4+tcp", "zstd+tcp")
LIMITS = (-1, 4096, 100)
LZ4_DICT = b"the quick brown fox jumps over the lazy dog " * 4
ZSTD_DICT = zstd.train_dict(
    [b"record %d: sensor ok, temp %d" % (i, i % 40) for i in range(400)], 1024
).dict_content
#: what the socket-type table tells a PULL's codec (the peers it accepts, ...)
PULL_FACTS = socket_type("PULL").handshake_facts()
GREETING = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x01" + b"NULL".ljust(20, b"\x00") + bytes(32)
READY = b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"


def _transform(scheme: str, limit: int, shipped: bool) -> PartTransform:
    transform = PartTransform(scheme, limit=limit)
    if shipped:
        shipment = b"LZ4D" + LZ4_DICT if scheme == "lz4+tcp" else ZSTD_DICT
        assert transform.decode([shipment]) == []
    return transform


def _check(transform: PartTransform, parts: list[bytes]) -> None:
    try:
        messages = transform.decode(parts)
    except ProtocolError:
        return
    for message in messages:
        assert sum(map(len, message)) <= transform.limit, (len(message), transform.limit)


def _shaped(fdp: atheris.FuzzedDataProvider, scheme: str) -> bytes:
    kind = fdp.ConsumeIntInRange(0, 4)
    content = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 2048))
    if kind == 0:
        part = b"\x00\x00\x00\x00" + content
    elif kind == 1 and scheme == "lz4+tcp":
        block = lz4.compress(content, store_size=False) if content else b"\x00"
        part = (
            b"LZ4B" + struct.pack("<Q", max(0, len(content) + fdp.ConsumeIntInRange(-2, 2))) + block
        )
    elif kind == 1:
        part = zstd.compress(content, level=fdp.ConsumeIntInRange(-5, 5))
    elif kind == 2:
        part = (b"LZ4D" if scheme == "lz4+tcp" else b"\x37\xa4\x30\xec") + content
    else:
        tag = b"LZ4A" if scheme == "lz4+tcp" else b"ZSTA"
        header = struct.pack(
            "<III",
            fdp.ConsumeIntInRange(0, 2),
            fdp.ConsumeIntInRange(0, 1 << 21),
            fdp.ConsumeIntInRange(0, 300),
        )
        part = tag + header + content
    damaged = bytearray(part)
    for _ in range(fdp.ConsumeIntInRange(0, 3)):
        if damaged:
            at = fdp.ConsumeIntInRange(0, len(damaged) - 1)
            damaged[at] = fdp.ConsumeIntInRange(0, 255)
    cut = fdp.ConsumeIntInRange(0, len(damaged))
    return bytes(damaged[:cut]) if fdp.ConsumeBool() else bytes(damaged)


def _frames(parts: list[bytes]) -> bytes:
    out = bytearray()
    for i, part in enumerate(parts):
        more = 0x01 if i < len(parts) - 1 else 0x00
        if len(part) > 255:
            out += bytes([more | 0x02]) + struct.pack(">Q", len(part)) + part
        else:
            out += bytes([more, len(part)]) + part
    return bytes(out)


def _read(scheme: str, limit: int, pieces: list[bytes]) -> tuple[list[Received], bool]:
    inner = Connection("PULL", maxmsgsize=wire_limit(limit), **PULL_FACTS)
    conn = CompressedConnection(inner, scheme=scheme, maxmsgsize=limit)
    conn.start()
    events: list[Received] = []
    try:
        events += conn.receive_data(GREETING + READY)
        for piece in pieces:
            events += conn.receive_data(piece)
    except ProtocolError:
        return events, False
    return events, True


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in itertools.pairwise([0, *points, len(data)])]


def test_one_input(raw: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(raw)
    scheme = SCHEMES[fdp.ConsumeIntInRange(0, 1)]
    limit = LIMITS[fdp.ConsumeIntInRange(0, len(LIMITS) - 1)]
    shipped = fdp.ConsumeBool()
    mode = fdp.ConsumeIntInRange(0, 3)
    if mode == 0:
        count = fdp.ConsumeIntInRange(1, 4)
        rest = fdp.ConsumeBytes(fdp.remaining_bytes())
        step = max(1, len(rest) // count)
        parts = [rest[i : i + step] for i in range(0, len(rest), step)][:count] or [b""]
        _check(_transform(scheme, limit, shipped), parts)
    elif mode == 1:
        parts = [_shaped(fdp, scheme) for _ in range(fdp.ConsumeIntInRange(1, 3))]
        _check(_transform(scheme, limit, shipped), parts)
    elif mode == 2:
        wire = b"".join(
            _frames([_shaped(fdp, scheme) for _ in range(fdp.ConsumeIntInRange(1, 2))])
            for _ in range(fdp.ConsumeIntInRange(1, 3))
        )
        cuts = [fdp.ConsumeIntInRange(0, 1 << 16) for _ in range(fdp.ConsumeIntInRange(0, 6))]
        whole, whole_ok = _read(scheme, limit, [wire])
        split, split_ok = _read(scheme, limit, _split(wire, cuts))
        if whole_ok != split_ok or (whole_ok and whole[1:] != split[1:]):
            raise AssertionError(f"split changed the outcome: {whole!r} vs {split!r}")
    else:
        dictionary = (LZ4_DICT if scheme == "lz4+tcp" else ZSTD_DICT) if shipped else None
        level = fdp.ConsumeIntInRange(-8, 12) if fdp.ConsumeBool() else None
        sender = PartTransform(
            scheme, level=level, dictionary=dictionary, auto_train=fdp.ConsumeBool()
        )
        receiver = PartTransform(scheme)
        data = fdp.ConsumeBytes(fdp.remaining_bytes())
        frames = [data[i : i + 700] for i in range(0, len(data), 700)] or [b""]
        for _ in range(2):
            # a new list each time, as the runtime queues every message (encoding the
            # same list again means the first encoding was not written)
            shipment, wire = sender.encode(list(frames))
            if shipment is not None:
                assert receiver.decode([shipment]) == []
            assert receiver.decode(wire) == [frames]


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
