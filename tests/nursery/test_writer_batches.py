"""The writer's batches are the codec's encoding, byte for byte, whatever mix of
messages is queued: short one-frame messages (which the writer frames itself on
unencrypted ZMTP), frames of 255 and 256 bytes around the short-header boundary,
several frames, other buffer types and commands between them."""

from __future__ import annotations

from typing import Any

import pytest
from zmtp.helpers import handshaken
from zmtp.test_curve import OK, curve_pair
from zmtp.test_plain import zap_handshake

from trizmq.nursery.fastpath.framing import frame_short_messages
from trizmq.nursery.pipe import Pipe
from trizmq.nursery.writer import _Batcher
from trizmq.patterns.sockets.base import Fanout, FanoutRun
from trizmq.zmtp import CurveClientMechanism, CurveServerMechanism
from trizmq.zmtp.events import Subscribe
from trizmq.zmtp.frames import SHORT_HEADERS

MESSAGES: list[Any] = [
    [b"a"],
    [b""],
    [b"x" * 255],
    [b"y" * 256],
    [b"m", b"n"],
    Subscribe(b"topic"),
    [bytearray(b"ba")],
    [memoryview(b"mv")],
    [b"z" * 70_000],
    [b"last"],
]


def expected(codec: Any, items: list[Any]) -> bytes:
    out = bytearray()
    for item in items:
        if isinstance(item, Subscribe):
            out += codec.encode_subscribe(item.topic)
        else:
            out += codec.encode_message(item)
    return bytes(out)


def written(codec: Any, items: list[Any]) -> bytes:
    pipe = Pipe(0)
    pipe.extend(items)
    batcher = _Batcher(None, codec, pipe, zero_copy=False)  # type: ignore[arg-type]
    assert batcher._plain is not codec.mechanism.encrypts  # the inline framing's switch
    out = bytearray()
    while pipe:
        for part in batcher.next_parts():
            out += part
    return bytes(out)


def test_plain_batches_are_the_codecs_encoding() -> None:
    codec = handshaken("XPUB", b"XSUB")
    assert written(codec, MESSAGES) == expected(codec, MESSAGES)


@pytest.mark.parametrize("size", [0, 1, 64, 254, 255, 256, 257])
def test_runs_of_one_size_are_the_codecs_encoding(size: int) -> None:
    codec = handshaken("PUSH", b"PULL")
    items = [[bytes([i % 256]) * size] for i in range(3000)]
    assert written(codec, items) == expected(codec, items)


def test_encrypted_batches_open_as_queued() -> None:
    # CURVE frames every message through the mechanism (no inline framing): what the
    # writer writes opens, in order, to what was queued
    pair = zap_handshake(curve_pair(client_type="XSUB", server_type="XPUB"), OK)
    client, server = pair.a, pair.b
    assert isinstance(client.mechanism, CurveClientMechanism)
    assert isinstance(server.mechanism, CurveServerMechanism)
    got = server.receive_data(written(client, MESSAGES))
    assert got == [
        Subscribe(b"topic") if isinstance(m, Subscribe) else [bytes(f) for f in m]
        for m in MESSAGES
    ]


@pytest.mark.parametrize("size", [0, 64, 222, 223])
def test_encrypted_runs_open_as_queued(size: int) -> None:
    # CURVE boxes a run of short one-frame messages in the mechanism's own loop
    # (seal_run), over several writes of WRITE_BATCH bytes; a run broken by anything
    # else, and the runs after it, open in order to what was queued
    pair = zap_handshake(curve_pair(client_type="XSUB", server_type="XPUB"), OK)
    client, server = pair.a, pair.b
    assert _Batcher(None, client, Pipe(0), zero_copy=False)._seal_run is not None  # type: ignore[arg-type]
    run = [[bytes([i % 256]) * size] for i in range(3000)]
    items = run + MESSAGES + run[:100]
    got = server.receive_data(written(client, items))
    assert got == [
        Subscribe(b"topic") if isinstance(m, Subscribe) else [bytes(f) for f in m] for m in items
    ]


def test_plain_batches_take_no_mechanism_run() -> None:
    codec = handshaken("PUSH", b"PULL")
    assert _Batcher(None, codec, Pipe(0), zero_copy=False)._seal_run is None  # type: ignore[arg-type]


def _frames(items: list[Any]) -> list[Any]:
    """What each queued item means: a run's wrapped first and last message unwrapped."""
    return [item.frames if isinstance(item, Fanout) else item for item in items]


def test_a_run_wraps_only_its_first_and_last_message() -> None:
    # the messages between them are queued as they are, the same objects in every
    # subscriber's queue; a run of one message is wrapped once
    msgs: list[Any] = [[b"a"], [b"b"], [b"c"], [b"d"]]
    run = FanoutRun(msgs)
    first, *middle, last = run.items
    assert isinstance(first, Fanout) and (first.run, first.index) == (run, 0)
    assert isinstance(last, Fanout) and (last.run, last.index) == (run, 3)
    assert all(got is msg for got, msg in zip(middle, msgs[1:3], strict=True))
    assert _frames(run.items) == msgs
    (only,) = FanoutRun([[b"x"]]).items
    assert isinstance(only, Fanout) and only.index == 0


def test_whole_runs_are_written_from_their_shared_encoding() -> None:
    # runs queued whole at the head go out as their shared encodings, several in one
    # buffer; a run cut short by the mark (its last message missing), one whose
    # first message went before, a run with a big frame (its encoding stops there)
    # and what follows them are the codec's encoding all the same, in order
    codec = handshaken("XPUB", b"XSUB")
    a = FanoutRun([[b"a%d" % i] for i in range(5)])
    b = FanoutRun([[b"b1", b"more"], [b"y" * 300]])
    cut = FanoutRun([[b"c1"], [b"c2"], [b"c3"]])
    begun = FanoutRun([[b"d1"], [b"d2"], [b"d3"]])
    big = FanoutRun([[b"e1"], [b"z" * 70_000], [b"e3"]])
    one = FanoutRun([[b"f"]])
    items = [
        *a.items,
        *b.items,
        *cut.items[:2],
        *begun.items[1:],
        Subscribe(b"t"),
        *one.items,
        *big.items,
        *a.items,
    ]
    pipe = Pipe(0)
    pipe.extend(items)
    batcher = _Batcher(None, codec, pipe, zero_copy=False)  # type: ignore[arg-type]
    assert batcher.next_parts() == [a.wire + b.wire]  # type: ignore[operator]
    assert len(pipe) == len(items) - 7
    out = bytearray(a.wire + b.wire)  # type: ignore[operator]
    while pipe:
        for part in batcher.next_parts():
            out += part
    assert bytes(out) == expected(codec, _frames(items))
    assert big.ends == [len(codec.encode_message([b"e1"]))]  # not past the big frame
    # a second connection writes the encoding the first one made
    other = Pipe(0)
    other.extend(a.items)
    parts = _Batcher(None, codec, other, zero_copy=False).next_parts()  # type: ignore[arg-type]
    assert parts == [a.wire] and parts[0] is a.wire and not other


def test_encrypted_connections_encode_runs_themselves() -> None:
    pair = zap_handshake(curve_pair(client_type="XSUB", server_type="XPUB"), OK)
    client, server = pair.a, pair.b
    run = FanoutRun([[b"m%d" % i] for i in range(10)])
    got = server.receive_data(written(client, [*run.items, *run.items[:4]]))
    assert got == run.msgs + run.msgs[:4]
    assert run.wire is None  # nothing shared: the encoding is this connection's own


def test_short_one_frame_messages_are_framed_at_once_up_to_the_limit() -> None:
    # the comprehension's framing: the codec's bytes, taken up to the message that
    # brings them to the limit (as the writer's loop stops), None for anything else
    codec = handshaken("PUSH", b"PULL")
    short = SHORT_HEADERS[0]
    items: list[Any] = [[bytes([i]) * (i % 200)] for i in range(100)]
    wire, count = frame_short_messages(items, short, 1 << 20) or (b"", 0)
    assert (wire, count) == (expected(codec, items), 100)
    sizes = [len(codec.encode_message(item)) for item in items]
    for limit in (1, sizes[0], sizes[0] + 1, sum(sizes[:50]), sum(sizes) - 1):
        wire, count = frame_short_messages(items, short, limit) or (b"", 0)
        ends = [sum(sizes[: i + 1]) for i in range(100)]
        assert count == next(i for i, end in enumerate(ends) if end >= limit) + 1
        assert wire == expected(codec, items[:count])
    for odd in ([b"y" * 256], [b"m", b"n"], Subscribe(b"t"), b"bare", Fanout([b"f"])):
        assert frame_short_messages([[b"a"], odd], short, 1 << 20) is None
