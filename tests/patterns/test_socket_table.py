"""The table of socket types: one row per type, each stated beside its strategy
(libzmq-wire-notes §2.4 for the peer types; the facts every layer reads of a type)."""

from __future__ import annotations

import pytest

from trizmq.patterns.sockets import (
    SOCKET_TYPES,
    SocketType,
    register_socket_type,
    socket_type,
    unregister_socket_type,
)
from trizmq.patterns.sockets.pipeline import PushStrategy


def test_all_types_present() -> None:
    assert {
        "PAIR", "PUB", "SUB", "REQ", "REP", "DEALER", "ROUTER", "PULL", "PUSH", "XPUB",
        "XSUB", "SERVER", "CLIENT", "RADIO", "DISH", "GATHER", "SCATTER", "PEER", "CHANNEL",
        "STREAM",
    } == set(SOCKET_TYPES)  # fmt: skip
    assert "DGRAM" not in SOCKET_TYPES
    for name, row in SOCKET_TYPES.items():
        assert row.name == name == row.strategy.socket_type


def test_the_peer_types_are_symmetric() -> None:
    for local, row in SOCKET_TYPES.items():
        for peer in row.peers:
            assert local in SOCKET_TYPES[peer].peers, (local, peer)
    assert SOCKET_TYPES["STREAM"].peers == frozenset()  # raw bytes: no ZMTP peer


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
    ],
)
def test_accepts(local: str, peer: str, ok: bool) -> None:
    assert socket_type(local).accepts(peer) is ok


def test_the_facts_of_each_type() -> None:
    def having(fact: str) -> set[str]:
        return {name for name, row in SOCKET_TYPES.items() if getattr(row, fact)}

    assert having("sends_identity") == {"REQ", "DEALER", "ROUTER"}
    assert having("takes_subscriptions") == {"PUB", "XPUB"}
    assert having("publishes") == {"PUB", "XPUB", "RADIO"}
    assert having("drops_at_hwm") == {"PUB", "XPUB", "RADIO", "REP", "ROUTER", "XSUB"}
    assert having("conflate_out") == {"PUSH", "PUB", "DEALER"}
    assert having("conflate_in") == {"PULL", "SUB", "DEALER"}
    assert having("addressed") == {"RADIO", "DISH", "SERVER", "PEER"}
    assert {name: row.udp for name, row in SOCKET_TYPES.items() if row.udp} == {
        "RADIO": "connect",
        "DISH": "bind",
    }
    assert {name for name, row in SOCKET_TYPES.items() if row.codec != "zmtp"} == {"STREAM"}


def test_the_options_a_type_takes_follow_from_its_row() -> None:
    # each option that applies to a few types, and the types it applies to
    takers: dict[str, set[str]] = {}
    for name, row in SOCKET_TYPES.items():
        for option in row.options:
            takers.setdefault(option, set()).add(name)
    assert takers == {
        "conflate": {"PUSH", "PULL", "PUB", "SUB", "DEALER"},
        "subscribe": {"SUB"},
        "router_mandatory": {"ROUTER"},
        "router_handover": {"ROUTER"},
        "xpub_verbose": {"XPUB"},
        "xpub_manual": {"XPUB"},
        "xpub_welcome_msg": {"XPUB"},
        "max_subscriptions": {"PUB", "XPUB", "RADIO"},
        "max_subscriptions_total": {"PUB", "XPUB", "RADIO"},
        "max_subscription_bytes": {"PUB", "XPUB"},
        "probe_router": {"ROUTER", "DEALER", "REQ"},
        "hello_msg": {"ROUTER", "DEALER", "CLIENT", "SERVER", "PEER"},
        "disconnect_msg": {"ROUTER", "SERVER", "PEER"},
        "req_correlate": {"REQ"},
        "req_relaxed": {"REQ"},
    }


def test_a_type_is_registered_and_unregistered_once() -> None:
    class Shove(PushStrategy):
        socket_type = "X-SHOVE"

    row = SocketType(Shove, peers={"PULL"})
    register_socket_type(row)
    try:
        assert socket_type("X-SHOVE") is row
        with pytest.raises(ValueError, match="already"):
            register_socket_type(row)
    finally:
        unregister_socket_type("X-SHOVE")
    with pytest.raises(KeyError, match="X-SHOVE"):
        socket_type("X-SHOVE")
    with pytest.raises(ValueError, match="built-in"):
        unregister_socket_type("PUSH")
