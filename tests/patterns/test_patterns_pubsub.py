"""Tests of the ``\\x01``/``\\x00`` subscription message form (29/PUBSUB, wire notes section 4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trizmq.patterns import (
    CANCEL,
    SUBSCRIBE,
    parse_subscription_message,
    subscription_message,
)


@pytest.mark.parametrize(
    ("frame", "parsed"),
    [
        (b"\x01topic", (True, b"topic")),
        (b"\x00topic", (False, b"topic")),
        (b"\x01", (True, b"")),  # subscribe to everything
        (b"\x00", (False, b"")),
        (b"\x01\x00\x01", (True, b"\x00\x01")),
        (b"", None),  # an empty message is not a subscription
        (b"\x02topic", None),
        (b"topic", None),
        (b"\xff", None),
    ],
)
def test_parse(frame: bytes, parsed: tuple[bool, bytes] | None) -> None:
    assert parse_subscription_message(frame) == parsed
    assert parse_subscription_message(bytearray(frame)) == parsed
    assert parse_subscription_message(memoryview(frame)) == parsed


def test_parse_returns_bytes_topics() -> None:
    result = parse_subscription_message(memoryview(b"\x01abc"))
    assert result is not None and type(result[1]) is bytes


def test_build() -> None:
    assert subscription_message(True, b"topic") == b"\x01topic"
    assert subscription_message(False, b"topic") == b"\x00topic"
    assert subscription_message(True, b"") == b"\x01"
    assert (SUBSCRIBE, CANCEL) == (1, 0)


@given(subscribe=st.booleans(), topic=st.binary(max_size=300))
def test_round_trip(subscribe: bool, topic: bytes) -> None:
    assert parse_subscription_message(subscription_message(subscribe, topic)) == (subscribe, topic)
