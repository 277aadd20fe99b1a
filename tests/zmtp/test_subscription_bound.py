"""A subscription over ``max_subscription`` is refused at its header on PUB and XPUB,
and a cancel over it is dropped there.

Its body is counted off as it arrives and none of it is kept, whatever the split of
the input; one :class:`SubscriptionRefused` reports a subscription at its end, in its
place among the other events, while a cancel goes unreported (it could cancel nothing
held); what follows parses as usual. Frames that are neither (a multipart message's,
another command or message) and every other socket type are untouched.
"""

from __future__ import annotations

import copy
import struct
import tracemalloc
from typing import Any

import pytest

from trizmq.zmtp import (
    Cancel,
    Connection,
    Ping,
    ProtocolError,
    Received,
    Subscribe,
    SubscriptionRefused,
)

from .helpers import connection, feed, handshaken, raw_command, raw_frame

KIB = 1024
MIB = 1024 * KIB


def pub(socket_type: str = "PUB", bound: int = 1000, **kwargs: Any) -> Connection:
    return handshaken(socket_type, b"SUB", max_subscription=bound, **kwargs)


def long_header(flags: int, size: int) -> bytes:
    return bytes((flags | 0x02,)) + struct.pack(">Q", size)


def subscribe_command(topic: bytes) -> bytes:
    return raw_command(b"SUBSCRIBE", topic)


def subscribe_message(topic: bytes, *, more: bool = False) -> bytes:
    return raw_frame(0x01 if more else 0x00, b"\x01" + topic)


def cancel_command(topic: bytes) -> bytes:
    return raw_command(b"CANCEL", topic)


def cancel_message(topic: bytes) -> bytes:
    return raw_frame(0x00, b"\x00" + topic)


@pytest.mark.parametrize("socket_type", ["PUB", "XPUB"])
@pytest.mark.parametrize("form", ["command", "message"])
@pytest.mark.parametrize("chunk", [1, 7, 999, 4096, 65536])
def test_a_long_subscription_is_refused_in_any_split(
    socket_type: str, form: str, chunk: int
) -> None:
    conn = pub(socket_type)
    make = subscribe_command if form == "command" else subscribe_message
    stream = (
        make(b"ok")
        + make(b"t" * 5000)
        + raw_command(b"PING", b"\x00\x0a")
        + make(b"x" * 1000)  # at the bound: kept
        + make(b"y" * 1001)  # one over
        + make(b"after")
    )
    events = feed(conn, stream, chunk)
    if form == "command":
        expected: list[Received] = [
            Subscribe(b"ok"),
            SubscriptionRefused(5000),
            Ping(1.0, b""),
            Subscribe(b"x" * 1000),
            SubscriptionRefused(1001),
            Subscribe(b"after"),
        ]
    else:
        expected = [
            [b"\x01ok"],
            SubscriptionRefused(5000),
            Ping(1.0, b""),
            [b"\x01" + b"x" * 1000],
            SubscriptionRefused(1001),
            [b"\x01after"],
        ]
    if chunk >= 4096:
        # a frame whole in one read is handed on as it is: the publisher refuses it
        whole = {
            4096: [True, False],  # 5000 spans two reads, 1001 comes whole
            65536: [False, False],
        }[chunk]
        for index, topic, keep in ((1, b"t" * 5000, whole[0]), (4, b"y" * 1001, whole[1])):
            if not keep:
                expected[index] = Subscribe(topic) if form == "command" else [b"\x01" + topic]
    assert events == expected
    assert not conn.in_message


@pytest.mark.parametrize("socket_type", ["PUB", "XPUB"])
@pytest.mark.parametrize("form", ["command", "message"])
@pytest.mark.parametrize("chunk", [1, 6, 999, 4096, 65536])
def test_a_long_cancel_is_dropped_in_any_split(socket_type: str, form: str, chunk: int) -> None:
    conn = pub(socket_type)
    make = cancel_command if form == "command" else cancel_message
    wrap = Cancel if form == "command" else lambda topic: [b"\x00" + topic]
    stream = (
        subscribe_command(b"ok")
        + make(b"t" * 5000)
        + raw_command(b"PING", b"\x00\x0a")
        + make(b"x" * 1000)  # at the bound: kept
        + make(b"y" * 1001)  # one over
        + make(b"ok")
        + subscribe_command(b"after")
    )
    commands = conn.commands_parsed
    events = feed(conn, stream, chunk)
    expected: list[Received] = [
        Subscribe(b"ok"),
        Ping(1.0, b""),
        wrap(b"x" * 1000),
        wrap(b"ok"),
        Subscribe(b"after"),
    ]
    if chunk >= 4096:
        # a frame whole in one read is handed on as it is: the publisher finds the
        # topic held by no one
        if chunk == 65536:
            expected.insert(1, wrap(b"t" * 5000))  # 5000 spans two reads at 4096
        expected.insert(-2, wrap(b"y" * 1001))
    assert events == expected
    assert not conn.in_message
    # only the commands and the PING were counted: a dropped cancel is no event
    assert conn.commands_parsed - commands == sum(not isinstance(event, list) for event in expected)


def feed_unkept(conn: Connection, head: bytes, topic: int, unheld: bool = False) -> int:
    """Feed ``head`` and then ``topic`` bytes of body in 64 KiB pieces, short of the
    last piece, asserting that no event comes and that what the parser holds stays
    flat (under 16 KiB more, peaking under 256 KiB); with ``unheld``, that no message
    is in progress either. Returns how many body bytes were fed."""
    piece = b"t" * (64 * KIB)
    tracemalloc.start()
    try:
        assert conn.receive_data(head + piece) == []
        base = tracemalloc.get_traced_memory()[0]
        sent = len(piece)
        while sent + len(piece) < topic:
            assert conn.receive_data(piece) == []
            if unheld:
                assert not conn.in_message
            sent += len(piece)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held - base < 16 * KIB, held - base
    assert peak - base < 256 * KIB, peak - base
    return sent


@pytest.mark.parametrize("form", ["command", "message"])
def test_a_huge_cancel_is_never_kept(form: str) -> None:
    """100 MiB declared, fed in 64 KiB pieces: nothing is held, nothing reported, and
    the next subscription and cancel come as usual."""
    conn = pub(bound=4 * MIB)
    topic = 100 * MIB
    body = b"\x06CANCEL" if form == "command" else b"\x00"
    header = long_header(0x04 if form == "command" else 0x00, len(body) + topic)
    sent = feed_unkept(conn, header + body, topic, unheld=True)
    rest = b"t" * (topic - sent) + subscribe_command(b"news") + cancel_message(b"news")
    assert conn.receive_data(rest) == [Subscribe(b"news"), [b"\x00news"]]


def test_a_cancel_header_alone_waits_for_the_first_bytes_of_the_body() -> None:
    conn = pub()
    assert conn.receive_data(long_header(0x04, 2000)) == []
    assert conn.receive_data(b"\x06CAN") == []
    assert conn.in_message  # not told yet: kept
    assert conn.receive_data(b"CEL" + b"t" * 100) == []
    assert not conn.in_message  # dropped: nothing held
    assert conn.receive_data(b"t" * 1893 + cancel_command(b"a")) == [Cancel(b"a")]


def test_the_body_is_never_kept() -> None:
    """100 MiB declared, fed in 64 KiB pieces: what the parser holds stays flat."""
    conn = pub(bound=4 * MIB)
    topic = 100 * MIB
    body = b"\x09SUBSCRIBE"
    header = long_header(0x04, len(body) + topic)
    sent = feed_unkept(conn, header + body, topic)
    rest = b"t" * (topic - sent) + subscribe_command(b"news")
    events = conn.receive_data(rest)
    assert events == [SubscriptionRefused(topic), Subscribe(b"news")]


def test_a_header_alone_waits_for_the_first_bytes_of_the_body() -> None:
    conn = pub()
    commands = conn.commands_parsed
    assert conn.receive_data(long_header(0x04, 2000)) == []
    assert conn.receive_data(b"\x09SUBSC") == []
    assert conn.in_message  # not told yet: kept
    assert conn.receive_data(b"RIBE" + b"t" * 100) == []
    assert not conn.in_message  # refused: nothing held
    events = conn.receive_data(b"t" * 1890 + subscribe_message(b"a"))
    assert events == [SubscriptionRefused(1990), [b"\x01a"]]
    # the driver is told to look at the events (they are not all messages)
    assert conn.commands_parsed > commands


def test_a_bytearray_or_view_input_is_taken_too() -> None:
    conn = pub()
    first = long_header(0x00, 3001) + b"\x01" + b"t" * 10
    assert conn.receive_data(bytearray(first)) == []
    assert conn.receive_data(memoryview(b"t" * 2000)) == []
    rest = bytearray(b"t" * 990 + subscribe_message(b"b"))
    events = conn.receive_data(rest)
    assert events == [SubscriptionRefused(3000), [b"\x01b"]]


@pytest.mark.parametrize(
    ("wire", "expected"),
    [
        # a multipart message's frames are messages, not subscriptions
        (
            subscribe_message(b"t" * 3000, more=True) + raw_frame(0, b"end"),
            [[b"\x01" + b"t" * 3000, b"end"]],
        ),
        (
            raw_frame(0x01, b"head") + subscribe_message(b"t" * 3000),
            [[b"head", b"\x01" + b"t" * 3000]],
        ),
        (
            raw_frame(0x01, b"\x00" + b"t" * 3000) + raw_frame(0, b"end"),
            [[b"\x00" + b"t" * 3000, b"end"]],
        ),
        # another command, another message: kept as they are
        (raw_frame(0, b"\x02" + b"t" * 3000), [[b"\x02" + b"t" * 3000]]),
        (raw_command(b"SUBSCRIBX", b"t" * 3000), None),
        (raw_command(b"CANCELX", b"t" * 3000), None),
        # a cancel at the bound: kept
        (cancel_command(b"t" * 1000), [Cancel(b"t" * 1000)]),
        (cancel_message(b"t" * 1000), [[b"\x00" + b"t" * 1000]]),
    ],
    ids=[
        "first-of-multipart",
        "last-of-multipart",
        "cancel-first-of-multipart",
        "other",
        "cmd",
        "cancel-cmd",
        "cancel-at-bound",
        "cancel-message-at-bound",
    ],
)
def test_what_is_not_a_subscription_is_kept(wire: bytes, expected: list[Received] | None) -> None:
    conn = pub()
    events = feed(conn, wire, 100)
    if expected is None:
        assert len(events) == 1 and not isinstance(events[0], SubscriptionRefused)
    else:
        assert events == expected


def test_a_subscribe_between_the_frames_of_a_message() -> None:
    """A command slipped between a message's frames is refused; the message goes on."""
    conn = pub()
    wire = raw_frame(0x01, b"a") + subscribe_command(b"t" * 3000) + raw_frame(0, b"b")
    assert feed(conn, wire, 500) == [SubscriptionRefused(3000), [b"a", b"b"]]


def test_a_cancel_between_the_frames_of_a_message() -> None:
    """A cancel slipped between a message's frames is dropped; the message goes on."""
    conn = pub()
    wire = raw_frame(0x01, b"a") + cancel_command(b"t" * 3000) + raw_frame(0, b"b")
    assert feed(conn, wire, 500) == [[b"a", b"b"]]


@pytest.mark.parametrize("socket_type", ["SUB", "PULL", "XSUB", "DEALER"])
def test_other_socket_types_ignore_the_bound(socket_type: str) -> None:
    peer = {"SUB": b"PUB", "XSUB": b"PUB", "PULL": b"PUSH", "DEALER": b"ROUTER"}[socket_type]
    conn = handshaken(socket_type, peer, max_subscription=10)
    wire = subscribe_message(b"t" * 3000) + cancel_message(b"t" * 3000)
    assert feed(conn, wire, 100) == [[b"\x01" + b"t" * 3000], [b"\x00" + b"t" * 3000]]


def test_no_bound_keeps_everything() -> None:
    conn = pub(bound=-1)
    wire = subscribe_command(b"t" * 3000) + cancel_command(b"t" * 3000)
    assert feed(conn, wire, 100) == [Subscribe(b"t" * 3000), Cancel(b"t" * 3000)]


def test_maxmsgsize_still_ends_the_connection_first() -> None:
    conn = pub(maxmsgsize=2000)
    with pytest.raises(ProtocolError, match="maxmsgsize"):
        conn.receive_data(long_header(0x04, 3010) + b"\x09SUBSCRIBE")


def test_a_bound_of_zero_admits_only_the_empty_topic() -> None:
    conn = pub(bound=0)
    wire = subscribe_message(b"") + subscribe_message(b"a") + subscribe_command(b"")
    assert feed(conn, wire, 1) == [[b"\x01"], SubscriptionRefused(1), Subscribe(b"")]
    wire = cancel_message(b"") + cancel_message(b"a") + cancel_command(b"a") + cancel_command(b"")
    assert feed(conn, wire, 1) == [[b"\x00"], Cancel(b"")]


def test_a_connection_discarding_stays_deep_copyable() -> None:
    conn = pub()
    conn.receive_data(long_header(0x04, 3010) + b"\x09SUBSCRIBE" + b"t" * 10)
    twin = copy.deepcopy(conn)
    for each in (conn, twin):
        assert each.receive_data(b"t" * 2990 + subscribe_command(b"z")) == [
            SubscriptionRefused(3000),
            Subscribe(b"z"),
        ]
    conn.receive_data(long_header(0x04, 3007) + b"\x06CANCEL" + b"t" * 10)
    twin = copy.deepcopy(conn)
    for each in (conn, twin):
        assert each.receive_data(b"t" * 2990 + cancel_command(b"z")) == [Cancel(b"z")]


def test_a_bad_bound_is_a_local_error() -> None:
    with pytest.raises(ValueError, match="max_subscription"):
        connection("PUB", max_subscription=-2)
