"""The RFC 6455 frame codec, checked frame for frame against wsproto (the oracle).

Both ways, with the C masker and with the pure-Python fallback: what
:class:`FrameEncoder` writes (each length form, masked from a client, unmasked
from a server) wsproto reads as the same messages; what wsproto writes (fragmented
messages with PING and PONG inside them, every length form, a CLOSE with a code
and a reason) :class:`FrameDecoder` reads as the same messages and control frames,
however the bytes are cut. Then each rule of the module docstring, broken.
"""

from __future__ import annotations

import builtins
import importlib
import itertools
import random
import sys
from collections.abc import Callable
from types import ModuleType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wsproto.frame_protocol import CloseReason, FrameProtocol, Opcode

from trizmq.zmtp import ProtocolError, rfc6455
from trizmq.zmtp.rfc6455 import (
    BINARY,
    CLOSE,
    CONTINUATION,
    PING,
    PONG,
    TEXT,
    FrameDecoder,
    FrameEncoder,
    Piece,
    WebSocketError,
    python_apply_mask,
)

#: the C masker and the fallback, as each codec may be given
MASKERS = {"c": rfc6455.apply_mask, "python": python_apply_mask}

#: a payload size in each length form: 7 bits, 16 bits, 64 bits (up to 1 MiB + 1)
SIZES = st.one_of(
    st.integers(0, 125),
    st.integers(126, 65535),
    st.integers(65536, 1024 * 1024 + 1),
    st.sampled_from([0, 1, 125, 126, 127, 65535, 65536]),
)

#: a control frame's payload
CONTROL_PAYLOADS = st.binary(max_size=125)


def payload_of(size: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(size)


def cut(data: bytes, points: list[int]) -> list[bytes]:
    """``data`` in pieces, cut at ``points`` (taken modulo its length)."""
    marks = sorted({p % (len(data) + 1) for p in points})
    return [data[a:b] for a, b in itertools.pairwise([0, *marks, len(data)])]


def oracle(client: bool) -> FrameProtocol:
    """wsproto's frame layer on the other side of ``client``."""
    return FrameProtocol(client=not client, extensions=[])


def messages_read_by_wsproto(proto: FrameProtocol, wire: bytes) -> list[tuple[Opcode, bytes]]:
    proto.receive_bytes(wire)
    out: list[tuple[Opcode, bytes]] = []
    partial = b""
    for frame in proto.received_frames():
        assert frame.opcode is not Opcode.CLOSE, frame
        if frame.opcode in (Opcode.PING, Opcode.PONG):
            out.append((frame.opcode, bytes(frame.payload)))  # type: ignore[arg-type]
            continue
        partial += bytes(frame.payload)  # type: ignore[arg-type]
        if frame.message_finished:
            out.append((frame.opcode, partial))
            partial = b""
    assert not partial
    return out


def read(decoder: FrameDecoder, pieces: list[bytes]) -> list[tuple[int, bytes]]:
    """Messages and control frames ``decoder`` reads from ``pieces``: a data message
    as (its first frame's opcode, its payload joined); a CLOSE as its frame."""
    out: list[tuple[int, bytes]] = []
    opcode, partial = -1, b""
    for data in pieces:
        for piece in decoder.receive_data(data):
            code, payload, remaining, fin = piece
            if code > BINARY:
                assert not remaining and fin
                out.append((code, payload))
                continue
            if opcode < 0:
                opcode = code
            partial += payload
            if fin and not remaining:
                out.append((opcode, partial))
                opcode, partial = -1, b""
    return out


# -- what trizmq writes, wsproto reads -------------------------------------------------------


@pytest.mark.parametrize("masker", MASKERS.values(), ids=MASKERS.keys())
@pytest.mark.parametrize("client", [True, False], ids=["client", "server"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    frames=st.lists(
        st.tuples(
            st.sampled_from(["binary", "split", "ping", "pong"]),
            SIZES,
            st.integers(0, 2**32),
            st.binary(max_size=8),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_what_the_encoder_writes_wsproto_reads(
    masker: Callable[[bytes, bytes], bytes],
    client: bool,
    frames: list[tuple[str, int, int, bytes]],
) -> None:
    encoder = FrameEncoder(client=client, masker=masker)
    wire = bytearray()
    expected: list[tuple[Opcode, bytes]] = []
    for kind, size, seed, head in frames:
        body = payload_of(size, seed)
        if kind == "binary":
            encoder.binary_into(wire, head, body)
            expected.append((Opcode.BINARY, head + body))
        elif kind == "split":  # one message in two frames, a PING between them
            wire += encoder.frame(BINARY, head, fin=False)
            wire += encoder.frame(PING, b"mid")
            wire += encoder.frame(CONTINUATION, body)
            expected += [(Opcode.PING, b"mid"), (Opcode.BINARY, head + body)]
        else:
            opcode = PING if kind == "ping" else PONG
            wire += encoder.frame(opcode, body[:125])
            expected.append((Opcode.PING if kind == "ping" else Opcode.PONG, body[:125]))
    assert messages_read_by_wsproto(oracle(client), bytes(wire)) == expected


@pytest.mark.parametrize("client", [True, False], ids=["client", "server"])
def test_each_length_form_is_the_shortest(client: bool) -> None:
    encoder = FrameEncoder(client=client)
    key = 4 if client else 0
    for size, header in [(0, 2), (125, 2), (126, 4), (65535, 4), (65536, 10)]:
        assert len(encoder.frame(BINARY, bytes(size))) == header + key + size
        out = bytearray()
        encoder.binary_into(out, b"\x00", bytes(size - 1) if size else b"")
        assert len(out) == header + key + max(size, 1)


def test_each_client_frame_has_a_fresh_key() -> None:
    encoder = FrameEncoder(client=True)
    keys = {encoder.frame(BINARY, b"x")[2:6] for _ in range(3000)}  # past one key pool
    assert len(keys) > 2990


def test_a_control_frame_over_125_bytes_is_a_local_error() -> None:
    with pytest.raises(ValueError, match="125"):
        FrameEncoder(client=False).frame(PING, bytes(126))


# -- what wsproto writes, trizmq reads -------------------------------------------------------

CLOSE_CODES = st.one_of(
    st.sampled_from([1000, 1001, 1002, 1003, 1007, 1008, 1009, 1011]),
    st.integers(3000, 4999),
)


@pytest.mark.parametrize("masker", MASKERS.values(), ids=MASKERS.keys())
@pytest.mark.parametrize("client", [True, False], ids=["client", "server"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    messages=st.lists(
        st.tuples(
            SIZES,
            st.integers(0, 2**32),
            st.lists(st.integers(0, 1024 * 1024), max_size=4),  # fragment boundaries
            st.lists(st.tuples(st.booleans(), CONTROL_PAYLOADS), max_size=3),  # PING/PONG
        ),
        max_size=5,
    ),
    close=st.none() | st.tuples(CLOSE_CODES, st.text(max_size=20)),
    points=st.lists(st.integers(0, 4 * 1024 * 1024), max_size=12),
)
def test_what_wsproto_writes_the_decoder_reads(
    masker: Callable[[bytes, bytes], bytes],
    client: bool,
    messages: list[tuple[int, int, list[int], list[tuple[bool, bytes]]]],
    close: tuple[int, str] | None,
    points: list[int],
) -> None:
    peer = oracle(client)
    wire = bytearray()
    expected: list[tuple[int, bytes]] = []
    for size, seed, bounds, controls in messages:
        payload = payload_of(size, seed)
        marks = sorted({b % (size + 1) for b in bounds})
        fragments = [payload[a:b] for a, b in itertools.pairwise([0, *marks, size])]
        last = len(fragments) - 1
        for i, fragment in enumerate(fragments):
            wire += peer.send_data(fragment, fin=i == last)
            if i == last:
                expected.append((BINARY, payload))
            if i < len(controls):  # inside the message (after it, past its last frame)
                is_ping, control = controls[i]
                wire += peer.ping(control) if is_ping else peer.pong(control)
                expected.append((PING if is_ping else PONG, control))
    if close is not None:
        code, reason = close
        frame = bytes(peer.close(code, reason))
        wire += frame
        expected.append((CLOSE, frame))
        wire += peer.send_data(b"after the close")  # never read
    wire = bytes(wire)
    decoder = FrameDecoder(client=client, masker=masker)
    got = read(decoder, cut(wire, points))
    assert got == expected
    assert decoder.closed == (close is not None)
    if close is not None:
        # the CLOSE goes to wsproto as it came: the code and reason are the peer's
        reader = oracle(not client)
        reader.receive_bytes(got[-1][1])
        [frame] = list(reader.received_frames())
        code, reason = close
        assert frame.payload == (CloseReason(code) if code < 3000 else code, reason)


@pytest.mark.parametrize("client", [True, False], ids=["client", "server"])
def test_the_first_piece_of_a_frame_comes_with_its_header(client: bool) -> None:
    """A data frame's declared length is known before any of its payload."""
    wire = bytes(oracle(client).send_data(bytes(70_000)))
    header = 10 + (0 if client else 4)
    decoder = FrameDecoder(client=client)
    assert decoder.receive_data(wire[: header - 1]) == []
    assert decoder.receive_data(wire[header - 1 : header]) == [(BINARY, b"", 70_000, True)]
    assert decoder.in_frame and decoder.in_message
    assert decoder.receive_data(wire[header : header + 5]) == [(BINARY, bytes(5), 69_995, True)]
    assert decoder.receive_data(wire[header + 5 :]) == [(BINARY, bytes(69_995), 0, True)]
    assert not decoder.in_frame and not decoder.in_message


# -- the rules, broken -----------------------------------------------------------------------


def header(b0: int, size: int, *, masked: bool, length: bytes | None = None) -> bytes:
    """A hand-made frame header (zero masking key when masked)."""
    if length is None:
        length = bytes((size,))
    first = length[0] | (0x80 if masked else 0)
    return bytes((b0, first)) + length[1:] + (bytes(4) if masked else b"")


RULES: list[tuple[str, bool, bytes, str]] = [
    ("rsv1", False, header(0xC2, 1, masked=True) + b"x", "reserved bits 0x40"),
    ("rsv3", True, header(0x92, 1, masked=False) + b"x", "reserved bits 0x10"),
    ("opcode-3", False, header(0x83, 0, masked=True), "reserved opcode 0x3"),
    ("opcode-b", True, header(0x8B, 0, masked=False), "reserved opcode 0xb"),
    ("unmasked-client-frame", False, header(0x82, 1, masked=False) + b"x", "not masked"),
    (
        "masked-server-frame",
        True,
        header(0x82, 1, masked=True) + b"x",
        "server frame that is masked",
    ),
    ("fragmented-ping", False, header(0x09, 0, masked=True), "fragmented ping"),
    ("fragmented-close", True, header(0x08, 0, masked=False), "fragmented close"),
    (
        "long-pong",
        False,
        header(0x8A, 0, masked=True, length=b"\x7e\x00\x7e") + bytes(126),
        "pong frame of 126 bytes",
    ),
    ("continuation-alone", False, header(0x80, 1, masked=True) + b"x", "no message open"),
    (
        "binary-inside-a-message",
        True,
        header(0x02, 1, masked=False) + b"x" + header(0x82, 1, masked=False) + b"y",
        "binary frame inside a fragmented message",
    ),
    ("long-16-bit", True, header(0x82, 0, masked=False, length=b"\x7e\x00\x05"), "in 16 bits"),
    (
        "long-64-bit",
        True,
        header(0x82, 0, masked=False, length=b"\x7f" + (300).to_bytes(8, "big")),
        "in 64 bits",
    ),
    (
        "top-bit",
        False,
        header(0x82, 0, masked=True, length=b"\x7f" + (1 << 63).to_bytes(8, "big")),
        "top bit",
    ),
]


@pytest.mark.parametrize(
    ("client", "wire", "reason"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_a_broken_rule_is_a_protocol_error_with_close_code_1002(
    client: bool, wire: bytes, reason: str
) -> None:
    for pieces in ([wire], [wire[i : i + 1] for i in range(len(wire))]):
        decoder = FrameDecoder(client=client)
        with pytest.raises(WebSocketError, match=reason) as caught:
            for data in pieces:
                decoder.receive_data(data)
        assert isinstance(caught.value, ProtocolError)
        assert caught.value.code == 1002 and "1002" in str(caught.value)


def test_a_text_frame_is_read_as_text() -> None:
    """Refusing text is ZWS's rule (:mod:`trizmq.zmtp.zws`), not RFC 6455's."""
    wire = bytes(oracle(False).send_data("hé"))
    assert FrameDecoder(client=False).receive_data(wire) == [(TEXT, "hé".encode(), 0, True)]


def test_nothing_is_read_after_a_close() -> None:
    peer = oracle(True)
    decoder = FrameDecoder(client=True)
    close = bytes(peer.close(1000, "bye"))
    pieces: list[Piece] = decoder.receive_data(close + bytes(peer.send_data(b"x")))
    assert pieces == [(CLOSE, close, 0, True)]
    assert decoder.receive_data(bytes(peer.send_data(b"y"))) == []


# -- the fallback ------------------------------------------------------------------------


def test_the_fallback_masks_as_the_c_masker() -> None:
    rng = random.Random(7)
    for size in [0, 1, 3, 4, 5, 125, 4096, 70_001]:
        data, key = rng.randbytes(size), rng.randbytes(4)
        assert python_apply_mask(data, key) == rfc6455.apply_mask(data, key)
        assert python_apply_mask(python_apply_mask(data, key), key) == data


def test_without_websockets_the_fallback_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """``websockets`` missing: the module loads and masks with the fallback."""
    real_import = builtins.__import__

    def no_websockets(name: str, *args: object, **kwargs: object) -> ModuleType:
        if name.startswith("websockets"):
            raise ImportError(f"no module named {name!r}")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_websockets)
    monkeypatch.delitem(sys.modules, "trizmq.zmtp.rfc6455")
    try:
        fallback = importlib.import_module("trizmq.zmtp.rfc6455")
        assert fallback.apply_mask is fallback.python_apply_mask
        wire = fallback.FrameEncoder(client=True).frame(BINARY, b"hello")
        assert fallback.FrameDecoder(client=False).receive_data(wire) == [
            (BINARY, b"hello", 0, True)
        ]
    finally:
        monkeypatch.undo()
        sys.modules["trizmq.zmtp.rfc6455"] = rfc6455
