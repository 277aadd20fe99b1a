"""The 64-byte greeting: our exact bytes, sent in stages, and every way a peer's can
be refused."""

from __future__ import annotations

import pytest

from trizmq._errors import StateError
from trizmq.zmtp import ProtocolError, build_greeting

from .helpers import connection, feed, raw_greeting, raw_ready

NULL_GREETING = (
    bytes.fromhex("ff 00 00 00 00 00 00 00 01 7f")  # signature, padding 00..01
    + bytes.fromhex("03 01")  # version 3.1
    + b"NULL" + bytes(16)  # mechanism, NUL-padded to 20
    + b"\x00"  # as-server
    + bytes(31)  # filler
)  # fmt: skip


def test_exact_greeting_bytes() -> None:
    assert build_greeting(b"NULL", False) == NULL_GREETING
    assert connection("PUB").start(staged=False) == NULL_GREETING


def test_greeting_goes_out_in_stages_as_the_peers_arrives() -> None:
    # 23/ZMTP's "backwards interoperability": the signature, the major version once
    # the peer's signature is in, the rest once its revision says ZMTP 3
    conn = connection("PUB")
    assert conn.start() == NULL_GREETING[:10]
    peer = raw_greeting()
    sent = b""
    for i in range(len(peer)):
        assert conn.receive_data(peer[i : i + 1]) == []
        sent += conn.data_to_send()
        if i < 9:
            assert sent == b"", i
        elif i == 9:
            assert sent == b"\x03", i
    assert NULL_GREETING[:10] + sent == NULL_GREETING + raw_ready((b"Socket-Type", b"PUB"))


def test_a_whole_greeting_at_once_is_answered_with_the_rest_of_ours() -> None:
    conn = connection("SUB")
    conn.start()
    conn.receive_data(raw_greeting())
    assert conn.data_to_send() == NULL_GREETING[10:] + raw_ready((b"Socket-Type", b"SUB"))


def test_start_twice_is_a_local_error() -> None:
    conn = connection("PUB")
    conn.start()
    with pytest.raises(StateError):
        conn.start()


def test_receive_before_start_is_a_local_error() -> None:
    with pytest.raises(StateError):
        connection("PUB").receive_data(raw_greeting())


def test_greeting_queues_ready_and_records_version() -> None:
    conn = connection("SUB")
    conn.start()
    assert conn.peer_version == (0, 0)
    assert conn.receive_data(raw_greeting()[:63]) == []
    assert conn.data_to_send() == NULL_GREETING[10:]  # the rest of our greeting
    assert conn.receive_data(raw_greeting()[63:]) == []
    assert conn.peer_version == (3, 1)
    assert conn.data_to_send() == raw_ready((b"Socket-Type", b"SUB"))
    assert conn.data_to_send() == b""
    assert not conn.handshake_complete


@pytest.mark.parametrize(("major", "minor"), [(3, 0), (3, 1), (3, 2), (4, 0), (255, 255)])
def test_accepted_versions(major: int, minor: int) -> None:
    conn = connection("SUB")
    conn.start()
    conn.receive_data(raw_greeting(major, minor) + raw_ready((b"Socket-Type", b"PUB")))
    assert conn.handshake_complete
    assert conn.peer_version == (major, minor)


def test_padding_and_as_server_are_not_validated() -> None:
    conn = connection("SUB")
    conn.start()
    greeting = raw_greeting(padding=b"\xde\xad\xbe\xef\x00\x12\x34\x56", as_server=1)
    events = conn.receive_data(greeting + raw_ready((b"Socket-Type", b"PUB")))
    assert conn.handshake_complete
    assert len(events) == 1


def _refused(data: bytes) -> ProtocolError:
    conn = connection("DEALER")
    conn.start()
    with pytest.raises(ProtocolError) as info:
        conn.receive_data(data)
    # the Connection is dead from now on
    with pytest.raises(ProtocolError):
        conn.receive_data(b"")
    return info.value


def test_bad_signature_refused_on_first_byte() -> None:
    err = _refused(b"\x00")
    assert "not a ZMTP 3 peer" in err.reason
    assert "unversioned" in str(err)


def test_unversioned_signature_bit_refused_at_tenth_byte() -> None:
    greeting = bytearray(raw_greeting())
    greeting[9] = 0x7E
    conn = connection("DEALER")
    conn.start()
    assert conn.receive_data(bytes(greeting[:9])) == []
    with pytest.raises(ProtocolError, match="unversioned"):
        conn.receive_data(bytes(greeting[9:10]))


@pytest.mark.parametrize(("major", "name"), [(0, "ZMTP 1.0"), (2, "ZMTP 2.x")])
def test_legacy_peer_refused_at_eleventh_byte(major: int, name: str) -> None:
    # such a peer sends 12 bytes and then waits: we must not wait for 64
    legacy = raw_greeting(major)[:11] + b"\x05"
    err = _refused(legacy)
    assert name in err.reason


def test_unversioned_zmtp10_peer_refused_at_once() -> None:
    # ZMTP 1.0: an identity frame, a short length first (not FF), and no signature
    conn = connection("DEALER")
    conn.start()
    with pytest.raises(ProtocolError, match=r"unversioned greeting \(ZMTP 1\.0\)"):
        conn.receive_data(b"\x01\x00")
    assert conn.data_to_send() == b""  # nothing more of our greeting goes out


def test_mechanism_mismatch_names_both() -> None:
    err = _refused(raw_greeting(mechanism=b"PLAIN"))
    assert "mechanism mismatch" in err.reason
    assert "PLAIN" in err.reason
    assert "NULL" in err.reason


def test_mechanism_must_match_exactly_including_padding() -> None:
    _refused(raw_greeting(mechanism=b"NULLX"))
    _refused(raw_greeting(mechanism=b"null"))
    _refused(raw_greeting(mechanism=b"NUL"))


def test_greeting_split_at_every_byte() -> None:
    conn = connection("SUB")
    conn.start()
    data = raw_greeting() + raw_ready((b"Socket-Type", b"PUB"))
    events = feed(conn, data, chunk=1)
    assert conn.handshake_complete
    assert len(events) == 1


@pytest.mark.parametrize("name", [b"", b"M" * 21])
def test_mechanism_name_length_checked(name: bytes) -> None:
    with pytest.raises(ValueError):
        build_greeting(name, False)
