"""The socket-type table of libzmq-wire-notes §2.4."""

from __future__ import annotations

import pytest

from trizmq.zmtp import COMPATIBLE, SENDS_IDENTITY, SOCKET_TYPES, is_compatible


def test_all_types_present() -> None:
    assert {
        "PAIR", "PUB", "SUB", "REQ", "REP", "DEALER", "ROUTER", "PULL", "PUSH", "XPUB",
        "XSUB", "SERVER", "CLIENT", "RADIO", "DISH", "GATHER", "SCATTER", "PEER", "CHANNEL",
    } == SOCKET_TYPES  # fmt: skip
    assert "DGRAM" not in SOCKET_TYPES


def test_table_is_symmetric() -> None:
    for local, peers in COMPATIBLE.items():
        for peer in peers:
            assert local in COMPATIBLE[peer], (local, peer)


@pytest.mark.parametrize(
    ("local", "peer", "ok"),
    [
        ("REQ", "ROUTER", True),
        ("REQ", "REQ", False),
        ("DEALER", "DEALER", True),
        ("XPUB", "XSUB", True),
        ("PUB", "PUB", False),
        ("PUSH", "PUB", False),
        ("RADIO", "DISH", True),
        ("PAIR", "pair", False),  # compared byte for byte
        ("PAIR", "DGRAM", False),
        ("NOPE", "PAIR", False),
    ],
)
def test_is_compatible(local: str, peer: str, ok: bool) -> None:
    assert is_compatible(local, peer) is ok


def test_sends_identity() -> None:
    assert frozenset({"REQ", "DEALER", "ROUTER"}) == SENDS_IDENTITY
