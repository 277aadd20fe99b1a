"""The frame walker behind drop() and delay(handshake=False), fed bytes synchronously."""

from __future__ import annotations

import pytest

from trizmq.testing._frames import FrameWalker
from trizmq.zmtp.commands import command_body
from trizmq.zmtp.frames import COMMAND, MORE, encode_frame
from trizmq.zmtp.greeting import build_greeting


def command(name: bytes, data: bytes = b"") -> bytes:
    return encode_frame(COMMAND, command_body(name, data))


def message(*frames: bytes) -> bytes:
    return b"".join(
        encode_frame(MORE if i < len(frames) - 1 else 0, frame) for i, frame in enumerate(frames)
    )


class Budget:
    """take_drop(): True for the next ``count`` messages, counting the questions."""

    def __init__(self, count: int = 0) -> None:
        self.count = count
        self.asked = 0

    def __call__(self) -> bool:
        self.asked += 1
        if self.count:
            self.count -= 1
            return True
        return False


def feed_all(walker: FrameWalker, data: bytes, step: int) -> list[tuple[bytes, bool]]:
    pieces: list[tuple[bytes, bool]] = []
    for i in range(0, len(data), step):
        pieces.extend(walker.feed(data[i : i + step]))
    return pieces


def kept(pieces: list[tuple[bytes, bool]]) -> bytes:
    return b"".join(piece for piece, _ in pieces)


READY_PUSH = command(b"READY", b"\x0bSocket-Type\x00\x00\x00\x04PUSH")
NULL_HANDSHAKE = build_greeting(b"NULL", False) + READY_PUSH


@pytest.mark.parametrize("step", [1, 2, 3, 7, 64, 10_000])
def test_drops_whole_messages_wherever_the_chunks_split(step: int) -> None:
    budget = Budget(2)
    walker = FrameWalker(budget)
    first = message(b"a", b"b" * 300, b"c")  # three frames, one of them long
    second = message(b"d")
    third = message(b"e", b"f")
    stream = NULL_HANDSHAKE + first + command(b"PING", b"\x00\x00") + second + third
    pieces = feed_all(walker, stream, step)
    assert kept(pieces) == NULL_HANDSHAKE + command(b"PING", b"\x00\x00") + third
    assert budget.asked == 3  # once per message, never for a command or a later frame
    assert walker.handshake_done


def test_commands_are_never_dropped_even_inside_a_message() -> None:
    budget = Budget(1)
    walker = FrameWalker(budget)
    walker.feed(NULL_HANDSHAKE)
    ping = command(b"PING", b"\x00\x00")
    subscribe = command(b"SUBSCRIBE", b"topic")
    pieces = walker.feed(
        encode_frame(MORE, b"part 1") + ping + encode_frame(0, b"part 2") + subscribe
    )
    assert kept(pieces) == ping + subscribe
    assert budget.asked == 1


def test_the_handshake_is_flagged_up_to_ready() -> None:
    walker = FrameWalker(Budget())
    data = message(b"hello")
    pieces = walker.feed(NULL_HANDSHAKE + data)
    assert pieces == [(NULL_HANDSHAKE, True), (data, False)]


@pytest.mark.parametrize(
    "commands", [[b"HELLO", b"INITIATE"], [b"WELCOME", b"READY"]], ids=["client", "server"]
)
def test_plain_handshakes_end_with_initiate_or_ready(commands: list[bytes]) -> None:
    budget = Budget(1)
    walker = FrameWalker(budget)
    handshake = build_greeting(b"PLAIN", False) + b"".join(command(c, b"x" * 20) for c in commands)
    second = message(b"kept")
    pieces = walker.feed(handshake + message(b"dropped") + second)
    assert pieces == [(handshake, True), (second, False)]


def test_curve_links_drop_nothing_and_never_ask() -> None:
    budget = Budget(5)
    walker = FrameWalker(budget)
    handshake = build_greeting(b"CURVE", False) + command(b"HELLO", bytes(194))
    handshake += command(b"INITIATE", bytes(250))
    # after the handshake every frame is a MESSAGE, flags 0: it looks like a message
    traffic = encode_frame(0, command_body(b"MESSAGE", bytes(40))) * 3
    # the handshake is still found, for delay(handshake=False)
    assert walker.feed(handshake + traffic) == [(handshake, True), (traffic, False)]
    assert walker.feed(traffic) == [(traffic, False)]
    assert budget.asked == 0


@pytest.mark.parametrize(
    "stream",
    [
        b"GET / HTTP/1.1\r\n\r\n",  # not ZMTP
        b"\xff" + bytes(8) + b"\x7f\x02\x00" + bytes(52),  # a ZMTP 2 greeting
        NULL_HANDSHAKE + b"\xf0garbage",  # reserved flag bits: not a frame
    ],
)
def test_what_is_not_zmtp_3_passes_untouched(stream: bytes) -> None:
    budget = Budget(5)
    walker = FrameWalker(budget)
    tail = message(b"x")
    assert kept(walker.feed(stream)) + kept(walker.feed(tail)) == stream + tail
    assert budget.asked == 0
    assert not walker.walking


def test_nothing_grows_with_a_huge_frame() -> None:
    walker = FrameWalker(Budget(1))
    walker.feed(NULL_HANDSHAKE)
    header = bytes([0x02]) + (10**12).to_bytes(8, "big")  # a 1 TB frame, declared
    assert walker.feed(header + bytes(1000)) == []  # dropped as it comes
    for _ in range(100):
        assert walker.feed(bytes(10_000)) == []
    assert walker._body_left == 10**12 - 1_001_000
    assert len(walker._header) == 0 and len(walker._name) == 0


@pytest.mark.parametrize("step", [1, 5, 9, 300, 10_000])
def test_skipping_frames_while_nothing_can_drop_keeps_the_boundaries(step: int) -> None:
    budget = Budget(1)
    armed = False
    walker = FrameWalker(budget, lambda: armed and budget.count > 0)  # as the network does
    ping = command(b"PING", b"\x00\x00")
    m2 = message(b"started", b"x" * 400, b"before the drop was armed")
    m3 = message(b"the first to start after")
    m4 = message(b"y" * 70_000, b"w" * 300, b"v")  # kept whole, once the budget is spent
    cut = len(NULL_HANDSHAKE) + len(message(b"one", b"z" * 500)) + len(ping) + 9 + 200
    stream = NULL_HANDSHAKE + message(b"one", b"z" * 500) + ping + m2 + m3 + m4 + ping + m4
    before = feed_all(walker, stream[:cut], step)  # m2's second frame cut in its middle
    assert budget.asked == 0
    armed = True
    after = feed_all(walker, stream[cut:], step)
    assert kept(before) + kept(after) == stream.replace(m3, b"")
    assert budget.asked == 1  # m3, dropped; then nothing can drop, so nobody asks


def test_a_message_skipped_right_after_a_drop_is_kept_whole() -> None:
    budget = Budget(1)
    walker = FrameWalker(budget, lambda: budget.count > 0)
    walker.feed(NULL_HANDSHAKE)
    assert walker.feed(message(b"dropped")) == []
    m = message(b"first frame", b"second frame", b"third")
    half = len(encode_frame(MORE, b"first frame")) + 5
    # the first frame is skipped in the tight loop, the second starts the frame walk
    assert kept(walker.feed(m[:half])) + kept(walker.feed(m[half:])) == m
