"""Peer states as data (``trizmq.nursery.peers``): the transition table, and the table
of peers that is the only place moving them."""

from __future__ import annotations

import itertools

import pytest

from trizmq.nursery.peers import TRANSITIONS, Peer, PeerState, PeerTable
from trizmq.nursery.pipe import Pipe
from trizmq.patterns.sockets import SOCKET_TYPES
from trizmq.patterns.sockets.table import options_for

NEW, WAITING, LIVE, GONE = PeerState.NEW, PeerState.WAITING, PeerState.LIVE, PeerState.GONE


def test_every_state_has_its_row() -> None:
    assert set(TRANSITIONS) == set(PeerState)
    for targets in TRANSITIONS.values():
        assert targets <= set(PeerState)


def test_gone_is_final_and_every_state_can_leave() -> None:
    assert TRANSITIONS[GONE] == frozenset()
    for state in (NEW, WAITING, LIVE):
        assert GONE in TRANSITIONS[state]


def test_lifelines_of_the_runtime_are_transitions() -> None:
    lives = [
        [NEW, LIVE, GONE],  # an accepted connection, an immediate connecter's
        [NEW, WAITING, LIVE, WAITING, LIVE, GONE],  # a kept connecter peer
        [NEW, WAITING, GONE],  # disconnected before it ever connected
        [NEW, GONE],  # refused at the handshake
    ]
    for life in lives:
        for a, b in itertools.pairwise(life):
            assert b in TRANSITIONS[a], (a, b)


def test_no_way_back_to_new() -> None:
    assert all(NEW not in targets for targets in TRANSITIONS.values())


@pytest.mark.parametrize(("state", "attached", "connected", "gone"), [
    (NEW, False, False, False),
    (WAITING, True, False, False),
    (LIVE, True, True, False),
    (GONE, False, False, True),
])
def test_derived_flags_follow_the_state(
    state: PeerState, attached: bool, connected: bool, gone: bool
) -> None:
    peer = Peer("tcp://x:1", Pipe(1), Pipe(1))
    path = {NEW: [], WAITING: [WAITING], LIVE: [WAITING, LIVE], GONE: [GONE]}[state]
    for step in path:
        PeerTable.move(peer, step)
    assert (peer.attached, peer.connected, peer.gone) == (attached, connected, gone)


def test_an_illegal_move_is_a_runtime_bug() -> None:
    peer = Peer("tcp://x:1", Pipe(1), Pipe(1))
    PeerTable.move(peer, GONE)
    with pytest.raises(RuntimeError, match="cannot move from gone to live"):
        PeerTable.move(peer, LIVE)


def table(socket_type: str = "PUSH") -> tuple[PeerTable, list[str]]:
    wakes: list[str] = []
    strategy = SOCKET_TYPES[socket_type].strategy(
        options_for(socket_type, {}), lambda: wakes.append("recv"), lambda: None
    )
    peers = PeerTable(
        strategy, lambda: wakes.append("receivers"), lambda: wakes.append("senders")
    )
    return peers, wakes


def test_attach_live_lost_leave_tell_the_strategy() -> None:
    peers, wakes = table("PUSH")
    peer = peers.add(Peer("tcp://x:1", Pipe(2), Pipe(2)))
    assert peer.state is NEW and len(peers) == 1
    assert peers.attach(peer) and peer.state is WAITING
    assert peers.strategy.send([b"queued"])  # routed before any connection
    peers.live(peer)
    assert peer.state is LIVE and peers.live_count() == 1
    peers.lost(peer)
    assert peer.state is WAITING and peers.queued() == (1, 0)  # the queue is kept
    peers.leave(peer)
    assert peer.state is GONE and len(peers) == 0
    assert not peers.strategy.send([b"nowhere"])
    assert "senders" in wakes


def test_a_pair_refuses_its_second_peer() -> None:
    peers, _ = table("PAIR")
    first = peers.add(Peer("tcp://x:1", Pipe(2), Pipe(2)))
    second = peers.add(Peer("tcp://x:2", Pipe(2), Pipe(2)))
    assert peers.attach(first)
    assert not peers.attach(second)
    assert second.state is NEW


def test_flushed_counts_unwritten_messages_but_not_a_live_inproc_link() -> None:
    peers, _ = table("PUSH")
    stream = peers.add(Peer("tcp://x:1", Pipe(2), Pipe(2)))
    link = peers.add(Peer("inproc://x", Pipe(2), Pipe(2), shared_queue=True))
    for peer in (stream, link):
        peers.attach(peer)
        peer.out_pipe.put([b"m"])
    assert not peers.all_flushed()
    peers.live(link)  # the other socket holds the queue now
    stream.out_pipe.drain()
    assert peers.all_flushed()
