"""The outbound half (``trizmq.zmtp.outbound``): what it makes of queued items is the
codec's encoding, byte for byte, whatever mix of messages is queued: short one-frame
messages (framed without the codec's call on unencrypted ZMTP), frames of 255 and
256 bytes around the short-header boundary, several frames, other buffer types and
commands between them, published runs shared between connections; and a write cut
short splits where a message ends, or leaves the bytes still owed for the one it
cut. Synchronous, with byte strings, as the rest of the protocol core is tested:
the queue is a list, taken from its head as a writer takes it."""

from __future__ import annotations

from itertools import accumulate
from typing import Any

import pytest

from trizmq.zmtp import CurveClientMechanism, CurveServerMechanism
from trizmq.zmtp.events import Subscribe
from trizmq.zmtp.frames import SHORT_HEADERS
from trizmq.zmtp.outbound import Outbound, Transmit, encode_run, frame_short_messages
from trizmq.zmtp.queue_items import Fanout, FanoutRun
from zmtp.helpers import handshaken
from zmtp.test_curve import OK, curve_pair
from zmtp.test_plain import zap_handshake

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


def step(outbound: Outbound, queue: list[Any]) -> Transmit:
    """A writer's step: a batch from the head of ``queue``, encoded; what the step
    holds leaves the queue, the rest stays."""
    batch = queue[: outbound.batch_limit(queue[0])]
    transmit = outbound.encode(batch)
    del queue[: transmit.used]
    return transmit


def written(codec: Any, items: list[Any]) -> bytes:
    queue = list(items)
    outbound = Outbound(codec)
    assert (outbound._short is None) is codec.mechanism.encrypts  # the inline framing's switch
    out = bytearray()
    while queue:
        for part in step(outbound, queue).parts:
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
    assert Outbound(client)._seal_run is not None
    run = [[bytes([i % 256]) * size] for i in range(3000)]
    items = run + MESSAGES + run[:100]
    got = server.receive_data(written(client, items))
    assert got == [
        Subscribe(b"topic") if isinstance(m, Subscribe) else [bytes(f) for f in m] for m in items
    ]


def test_plain_batches_take_no_mechanism_run() -> None:
    codec = handshaken("PUSH", b"PULL")
    assert Outbound(codec)._seal_run is None


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
    queue = list(items)
    outbound = Outbound(codec)
    first = step(outbound, queue)
    assert first.parts == [a.wire + b.wire]  # type: ignore[operator]
    # what the step holds, counted as it leaves: the runs' messages and their payload
    assert first.used == first.messages == 7
    assert first.payload == sum(sum(map(len, m)) for m in (*a.msgs, *b.msgs))
    assert len(queue) == len(items) - 7
    out = bytearray(a.wire + b.wire)  # type: ignore[operator]
    while queue:
        for part in step(outbound, queue).parts:
            out += part
    assert bytes(out) == expected(codec, _frames(items))
    assert big.ends == [len(codec.encode_message([b"e1"]))]  # not past the big frame
    # a second connection writes the encoding the first one made
    other = list(a.items)
    parts = step(Outbound(codec), other).parts
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


# -- published runs' shared encodings ---------------------------------------------------
def test_a_runs_shared_encoding_is_the_codecs() -> None:
    # a published batch is encoded once for every subscriber (short one-frame
    # messages framed inline on unencrypted ZMTP): byte for byte the codec's
    # encoding, and each message's end where the codec's would be
    codec = handshaken("XPUB", b"XSUB")
    msgs = [[b"a"], [b""], [b"x" * 255], [b"y" * 256], [b"m", b"n"], [b"last"]]
    run = FanoutRun(msgs)
    encoded = [codec.encode_message(m) for m in msgs]
    assert encode_run(run, codec.message_encoder()) == run.wire == b"".join(encoded)
    assert run.ends == list(accumulate(map(len, encoded)))
    assert run.count == len(msgs)


def test_a_run_of_short_one_frame_messages_is_framed_at_once() -> None:
    # the commonest run takes the comprehension's path: the same bytes as the
    # codec's, its ends worked out only when asked for (a partial write)
    codec = handshaken("XPUB", b"XSUB")
    msgs = [[b"a"], [b""], [b"x" * 255], [b"last"]]
    run = FanoutRun(msgs)
    encoded = [codec.encode_message(m) for m in msgs]
    assert encode_run(run, codec.message_encoder()) == b"".join(encoded)
    assert run.count == len(msgs) and run._ends is None
    assert run.ends == list(accumulate(map(len, encoded)))
    # a frame of 256 bytes, or a message of two frames, takes the loop
    for odd in ([b"y" * 256], [b"m", b"n"]):
        mixed = FanoutRun([[b"a"], odd, [b"b"]])
        wire = encode_run(mixed, codec.message_encoder())
        assert wire == b"".join(codec.encode_message(m) for m in mixed.msgs)
        assert mixed._ends is not None and mixed.count == 3


@pytest.mark.parametrize("room", [10**6, 8, 9, 12, 13, 15, 16, 19])
def test_runs_at_the_head_split_where_a_write_stopped(room: int) -> None:
    # runs a and b are queued whole; c was cut short by this connection's mark (its
    # last message is not here): their shared encodings are one step, c is not in
    # it; a write the kernel took part of (in a's wire, at its end, in b's) leaves
    # the bytes still owed for the message it cut, then the rest in order
    codec = handshaken("XPUB", b"XSUB")
    a = FanoutRun([[b"a1"], [b"a2"], [b"a3"]])
    b = FanoutRun([[b"b1"], [b"b2"]])
    c = FanoutRun([[b"c1"], [b"c2"], [b"c3"]])
    queue = [*a.items, *b.items, *c.items[:2]]
    transmit = Outbound(codec).encode_runs(queue)
    assert transmit is not None
    assert transmit.parts == [a.wire, b.wire] and transmit.used == 5
    wire = a.wire + b.wire  # type: ignore[operator]
    ends = a.ends + [len(a.wire) + end for end in b.ends]  # type: ignore[arg-type]
    whole, rest = transmit.split(min(room, len(wire)))
    if room > 100:
        assert (whole, rest) == (5, None)
        assert transmit.payload_of(whole) == transmit.payload == 10
    else:
        cut = next(i for i, end in enumerate(ends) if end > room)
        assert whole == cut
        assert rest == (wire[room : ends[cut]] if ends[cut - 1] < room else None)
        assert transmit.payload_of(whole) == 2 * whole


def test_runs_not_whole_at_the_head_are_no_shared_step() -> None:
    # the head's run misses its first message (written before) or its last (cut by
    # the mark): nothing is shared; the ordinary path takes the queue
    codec = handshaken("XPUB", b"XSUB")
    a = FanoutRun([[b"a1"], [b"a2"], [b"a3"]])
    for queue in (a.items[1:], a.items[:2]):
        assert Outbound(codec).encode_runs(queue) is None


def test_a_batch_written_in_part_leaves_the_rest_owed_whole() -> None:
    """The write-through's step: the messages a partial write covered left; the one it
    cut is owed only its bytes still unwritten; the rest stay as they were."""
    codec = handshaken("PUSH", b"PULL")
    queue: list[Any] = [[b"aaa"], [b"bb"], [b"cccc"], Subscribe(b"t")]
    transmit = Outbound(codec).encode_messages(queue)
    wire = b"".join(codec.encode_message(m) for m in queue[:3])
    assert transmit.parts == [wire] and transmit.used == transmit.messages == 3
    assert transmit.ends == [5, 9, 15]
    assert transmit.split(7) == (1, wire[7:9])
    assert transmit.payload_of(2) == 5
    assert transmit.split(5) == (1, None)  # on a boundary
    assert transmit.split(0) == (0, None)
    assert transmit.split(15) == (3, None)


def test_a_lone_message_is_the_codecs_encoding_with_its_payload() -> None:
    codec = handshaken("PUSH", b"PULL")
    outbound = Outbound(codec)
    for msg in ([b"a"], [b"x" * 255, b""], [b"y" * 300], [b"m", b"n" * 256]):
        encoded = outbound.encode_message(msg)
        assert encoded is not None
        wire, payload = encoded
        assert wire == codec.encode_message(msg)
        assert payload == sum(map(len, msg))
    shared = Fanout([b"f", b"g"])
    encoded = outbound.encode_message(shared)
    assert encoded is not None
    wire, payload = encoded
    assert wire == codec.encode_message([b"f", b"g"]) and shared.wire == wire
    assert payload == shared.size == 2
    assert outbound.encode_message([b"z" * 70_000]) is None  # a big frame: the writer's
    assert outbound.encode_message(Subscribe(b"t")) is None
