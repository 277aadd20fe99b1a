"""libzmq's udp:// RADIO/DISH datagram (wire notes §8): trizmq.zmtp.datagram."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trizmq.zmtp import ProtocolError
from trizmq.zmtp.datagram import MAX_DATAGRAM, MAX_GROUP, decode_datagram, encode_datagram


def test_example_from_the_notes() -> None:
    assert encode_datagram(b"grp", b"hi") == bytes.fromhex("03 67 72 70 68 69")
    assert decode_datagram(bytes.fromhex("03 67 72 70 68 69")) == (b"grp", b"hi")


def test_empty_group_and_body() -> None:
    assert encode_datagram(b"", b"") == b"\x00"
    assert decode_datagram(b"\x00") == (b"", b"")
    assert decode_datagram(b"\x00body") == (b"", b"body")
    assert decode_datagram(b"\x02ab") == (b"ab", b"")


def test_bytes_like_inputs() -> None:
    data = encode_datagram(bytearray(b"g"), memoryview(b"body"))
    assert data == b"\x01gbody"
    assert decode_datagram(memoryview(data)) == (b"g", b"body")
    assert decode_datagram(bytearray(data)) == (b"g", b"body")
    group, body = decode_datagram(memoryview(data))
    assert type(group) is bytes and type(body) is bytes


def test_size_limit() -> None:
    group = b"g" * MAX_GROUP
    body = b"x" * (MAX_DATAGRAM - 1 - MAX_GROUP)
    data = encode_datagram(group, body)
    assert len(data) == MAX_DATAGRAM
    assert decode_datagram(data) == (group, body)
    with pytest.raises(ValueError, match="8192"):
        encode_datagram(group, body + b"x")
    with pytest.raises(ValueError, match="8192"):
        encode_datagram(b"", b"x" * MAX_DATAGRAM)
    with pytest.raises(ProtocolError, match="exceeds"):
        decode_datagram(data + b"x")


def test_group_too_long() -> None:
    with pytest.raises(ValueError, match="255"):
        encode_datagram(b"g" * 256, b"")


@pytest.mark.parametrize("data", [b"", b"\x01", b"\x05abcd", b"\xff" + b"a" * 254])
def test_malformed(data: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_datagram(data)


@given(st.binary(max_size=MAX_GROUP), st.binary(max_size=2000))
def test_roundtrip(group: bytes, body: bytes) -> None:
    assert decode_datagram(encode_datagram(group, body)) == (group, body)


@given(st.binary(max_size=MAX_DATAGRAM + 10))
def test_decode_never_raises_anything_else(data: bytes) -> None:
    try:
        group, body = decode_datagram(data)
    except ProtocolError:
        return
    assert bytes((len(group),)) + group + body == data
