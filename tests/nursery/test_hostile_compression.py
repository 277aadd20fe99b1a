"""Hostile compressed peers: raw tcp clients breaking lz4+tcp:// and zstd+tcp://.

Each case opens a raw stream to a binding trizmq Pull that also serves a
well-behaved trizmq Push, completes a ZMTP handshake, sends one hostile message
and checks that trizmq closes that connection by itself with the reason logged and
counted (``disconnect_causes``: ``protocol_error``, or ``limit`` for a size over
``maxmsgsize``), while the good peer's messages keep arriving, none lost. The bytes
are built here, independently of ``trizmq.zmtp``; the allocation bounds themselves
are measured in ``tests/zmtp/test_compression.py``.
"""

from __future__ import annotations

import importlib
import logging
import struct
from contextlib import suppress
from typing import Any

import pytest
import trio

import trizmq

MAXMSGSIZE = 64 * 1024
GREETING = b"\xff" + b"\x00" * 8 + b"\x7f\x03\x01" + b"NULL".ljust(20, b"\x00") + bytes(32)
READY = b"\x04\x1a\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
ZDICT_MAGIC = b"\x37\xa4\x30\xec"


def _zstd() -> Any:
    try:
        return importlib.import_module("compression.zstd")
    except ImportError:
        return importlib.import_module("backports.zstd")


def frame(body: bytes, *, more: bool = False) -> bytes:
    flags = 0x01 if more else 0x00
    if len(body) > 255:
        return bytes([flags | 0x02]) + struct.pack(">Q", len(body)) + body
    return bytes([flags, len(body)]) + body


def lz4b(size: int, block: bytes) -> bytes:
    return b"LZ4B" + struct.pack("<Q", size) + block


def batch(
    tag: bytes, body: bytes, *, flag: int = 0, size: int | None = None, count: int = 1
) -> bytes:
    return tag + struct.pack("<III", flag, len(body) if size is None else size, count) + body


def _cases() -> dict[str, tuple[str, bytes, str, str]]:
    """case -> (scheme, the hostile bytes after the handshake, logged reason, cause)."""
    zstd = _zstd()
    sizeless = {zstd.CompressionParameter.content_size_flag: 0}
    dictionary = zstd.train_dict([b"record %d of many" % i for i in range(300)], 1024).dict_content
    big = zstd.compress(b"\x00" * (4 * MAXMSGSIZE))
    bomb = zstd.compress(
        b"\x00" * (64 * MAXMSGSIZE),
        options={**sizeless, zstd.CompressionParameter.window_log: 16},
    )
    wide = zstd.compress(
        b"\x00" * (16 * MAXMSGSIZE), options={**sizeless, zstd.CompressionParameter.window_log: 20}
    )
    truncated = zstd.compress(b"abc" * 5000)[:-8]
    return {
        "lz4-unknown-sentinel": (
            "lz4+tcp",
            frame(b"NOPE" + b"x" * 10),
            "unknown lz4 sentinel",
            "protocol_error",
        ),
        "zstd-unknown-sentinel": (
            "zstd+tcp",
            frame(b"LZ4B" + b"x" * 10),
            "unknown zstd sentinel",
            "protocol_error",
        ),
        "no-sentinel": ("lz4+tcp", frame(b"\x00\x00"), "has no sentinel", "protocol_error"),
        "lz4-second-dictionary": (
            "lz4+tcp",
            frame(b"LZ4D" + b"d" * 100) + frame(b"LZ4D" + b"e" * 100),
            "a second lz4 dictionary",
            "protocol_error",
        ),
        "zstd-second-dictionary": (
            "zstd+tcp",
            frame(dictionary) + frame(dictionary),
            "a second zstd dictionary",
            "protocol_error",
        ),
        "lz4-dictionary-over-limit": (
            "lz4+tcp",
            frame(b"LZ4D" + b"d" * 9000),
            "over the 8196-byte limit",
            "protocol_error",
        ),
        "zstd-dictionary-over-limit": (
            "zstd+tcp",
            frame(ZDICT_MAGIC + b"d" * 65_600),
            "over the 65536-byte limit",
            "protocol_error",
        ),
        "dictionary-in-a-multipart-message": (
            "lz4+tcp",
            frame(b"\x00\x00\x00\x00a", more=True) + frame(b"LZ4D" + b"d" * 10),
            "in a message of several parts",
            "protocol_error",
        ),
        "lz4-truncated-block": (
            "lz4+tcp",
            frame(lz4b(1000, b"\xf0\xff\xff")),
            "malformed LZ4 block",
            "protocol_error",
        ),
        "lz4-declares-over-maxmsgsize": (
            "lz4+tcp",
            frame(lz4b(1 << 40, b"\x1f\x00")),
            "exceeds the 65536-byte limit",
            "limit",
        ),
        "zstd-declares-over-maxmsgsize": (
            "zstd+tcp",
            frame(big),
            "exceeds the 65536-byte limit",
            "limit",
        ),
        "zstd-sizeless-bomb": ("zstd+tcp", frame(bomb), "exceeds the 65536-byte limit", "limit"),
        "zstd-window-over-maxmsgsize": ("zstd+tcp", frame(wide), "window of 1048576", "limit"),
        "zstd-truncated-frame": ("zstd+tcp", frame(truncated), "Zstandard frame", "protocol_error"),
        "zstd-malformed-header": (
            "zstd+tcp",
            frame(ZSTD_MAGIC + b"\xff" * 12),
            "malformed Zstandard",
            "protocol_error",
        ),
        "batch-over-its-limit": (
            "zstd+tcp",
            frame(batch(b"ZSTA", b"", size=4 << 20, count=100)),
            "exceeds its",
            "limit",
        ),
        "batch-miscounted": (
            "lz4+tcp",
            frame(batch(b"LZ4A", b"\x00\x02hi", count=3)),
            "holds 1",
            "protocol_error",
        ),
    }


CASES = _cases()


async def _closed_by_server(stream: trio.abc.Stream) -> None:
    while True:
        try:
            data = await stream.receive_some(65536)
        except trio.BrokenResourceError:
            return
        if not data:
            return


@pytest.mark.parametrize("case", sorted(CASES))
async def test_a_hostile_part_costs_only_its_connection(
    caplog: pytest.LogCaptureFixture, case: str
) -> None:
    scheme, script, reason, cause = CASES[case]
    caplog.set_level(logging.WARNING, logger="trizmq")
    with trio.fail_after(20):
        async with (
            trizmq.Pull(maxmsgsize=MAXMSGSIZE) as pull,
            pull.monitor() as events,
            trizmq.Push(linger=0) as push,
        ):
            endpoint = await pull.bind(f"{scheme}://127.0.0.1:0")
            await push.connect(endpoint)
            for i in range(10):
                await push.send_multipart([b"good", b"%d" % i, b"z" * 2000])
                assert await pull.recv_multipart() == [b"good", b"%d" % i, b"z" * 2000]
            host, _, port = endpoint.partition("://")[2].rpartition(":")
            async with await trio.open_tcp_stream(host, int(port)) as stream:
                await stream.send_all(GREETING + READY)
                handshakes = 0
                async for event in events:  # in traffic first: then the hostile part
                    if isinstance(event, trizmq.HandshakeSucceeded):
                        handshakes += 1  # the good peer's, then ours
                        if handshakes == 2:
                            break
                with suppress(trio.BrokenResourceError):
                    await stream.send_all(script)
                async with trio.open_nursery() as nursery:
                    # the good peer goes on meanwhile
                    async def good() -> None:
                        for i in range(10, 20):
                            await push.send_multipart([b"good", b"%d" % i])
                            assert await pull.recv_multipart() == [b"good", b"%d" % i]

                    nursery.start_soon(good)
                    await _closed_by_server(stream)
            disconnected = 0
            async for event in events:
                if isinstance(event, trizmq.Disconnected):
                    disconnected += 1
                    break
            assert disconnected == 1
            await push.send(b"after")
            assert await pull.recv() == b"after"
            stats = pull.stats()
            assert stats.disconnect_causes[cause] == 1
            assert len(stats.peers) == 1
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(reason in message for message in logged), logged
