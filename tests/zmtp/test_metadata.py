"""Metadata encoding (wire notes §2.2) and strict decoding (§2.3)."""

from __future__ import annotations

import pytest

from trizmq.zmtp import ProtocolError, decode_metadata, encode_metadata

DEALER_PROPS = b"\x0bSocket-Type\x00\x00\x00\x06DEALER\x08Identity\x00\x00\x00\x00"


def test_encode_exact_bytes_in_order() -> None:
    assert encode_metadata({"Socket-Type": b"DEALER", "Identity": b""}) == DEALER_PROPS


def test_round_trip_keeps_order_and_case() -> None:
    props = {"Socket-Type": b"SUB", "X-Hello": b"\x00\xff" * 300, "socket-type": b""}
    decoded = decode_metadata(encode_metadata(props))
    assert decoded == props
    assert list(decoded) == list(props)


def test_empty() -> None:
    assert encode_metadata({}) == b""
    assert decode_metadata(b"") == {}


@pytest.mark.parametrize("name", ["", "x" * 256, "caf\u00e9"])
def test_encode_rejects_bad_names(name: str) -> None:
    with pytest.raises(ValueError):
        encode_metadata({name: b""})


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (DEALER_PROPS + b"\x00", "empty property name"),
        (DEALER_PROPS + b"\x05", "truncated property name"),
        (DEALER_PROPS + b"\x01X\x00\x00", "truncated value size"),
        (DEALER_PROPS + b"\x01X\x00\x00\x00\x02a", "truncated value of"),
        (DEALER_PROPS[:-1], "truncated value size"),
        (b"\x0bSocket-Type\x00\x00\x00\x06DEALE", "truncated value of"),
        (b"\x0bSocket-Type\x00\x00\x00\x03SUB\x00", "empty property name"),
    ],
)
def test_decode_is_strict(body: bytes, reason: str) -> None:
    with pytest.raises(ProtocolError, match=reason):
        decode_metadata(body)
