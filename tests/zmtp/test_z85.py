"""Z85 (RFC 32) and key argument parsing."""

from __future__ import annotations

import os

import pytest
import zmq.utils.z85

from trizmq.zmtp import curve_keypair, curve_public, decode_key, z85_decode, z85_encode

HELLO_WORLD = bytes((0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B))
# the libzmq test suite's key pairs (tests/testutil_security.cpp)
CLIENT_PUBLIC = b"Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
CLIENT_SECRET = b"D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs"
SERVER_PUBLIC = b"rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
SERVER_SECRET = b"JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6"


def test_rfc_vector() -> None:
    assert z85_encode(HELLO_WORLD) == b"HelloWorld"
    assert z85_decode(b"HelloWorld") == HELLO_WORLD
    assert z85_decode("HelloWorld") == HELLO_WORLD
    assert z85_encode(b"") == b"" == z85_decode(b"")


def test_extremes_and_pyzmq_agree() -> None:
    assert z85_encode(b"\x00" * 4) == b"00000"
    assert z85_encode(b"\xff" * 4) == b"%nSc0"
    for size in (4, 8, 32, 64):
        data = os.urandom(size)
        encoded = z85_encode(data)
        assert encoded == zmq.utils.z85.encode(data)
        assert z85_decode(encoded) == data


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"Hell", "multiple of 5"),
        (b"Hello~", "multiple of 5"),
        (b"Hell~", "invalid Z85 character '~' at position 4"),
        (b'Hell"', "invalid Z85 character"),
        (b"%nSc1", "overflows 32 bits"),
        (b"#####", "overflows 32 bits"),
        ("Hellé", "ASCII"),
    ],
)
def test_decode_errors(text: bytes | str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        z85_decode(text)


def test_encode_error() -> None:
    with pytest.raises(ValueError, match="multiple of 4"):
        z85_encode(b"abc")


def test_decode_key_forms() -> None:
    raw = z85_decode(CLIENT_PUBLIC)
    assert decode_key(raw, name="k") == raw
    assert decode_key(bytearray(raw), name="k") == raw
    assert decode_key(CLIENT_PUBLIC, name="k") == raw
    assert decode_key(CLIENT_PUBLIC.decode(), name="k") == raw


@pytest.mark.parametrize(
    "key", [b"", b"x" * 31, b"x" * 33, b"x" * 41, "x" * 32, "~" * 40, b"~" * 40]
)
def test_decode_key_errors_name_the_argument(key: bytes | str) -> None:
    with pytest.raises(ValueError, match="server_key"):
        decode_key(key, name="server_key")


def test_decode_key_wrong_type() -> None:
    with pytest.raises(TypeError, match="secret_key"):
        decode_key(42, name="secret_key")  # type: ignore[arg-type]


def test_keypairs() -> None:
    public, secret = curve_keypair()
    assert len(public) == len(secret) == 40
    assert curve_public(secret) == public
    assert curve_public(z85_decode(secret)) == public
    assert curve_public(CLIENT_SECRET) == CLIENT_PUBLIC
    assert curve_public(SERVER_SECRET.decode()) == SERVER_PUBLIC
    assert zmq.curve_public(secret) == public
