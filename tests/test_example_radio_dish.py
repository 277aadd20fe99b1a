"""examples/radio_dish.py: udp multicast telemetry to several dishes, clean shutdown."""

from __future__ import annotations

import re
import select
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import trio

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "radio_dish.py"
GROUP = "239.192.0.1"
# multicast on the loopback interface, port 0: the first dish picks the port
ENDPOINT = f"udp://127.0.0.1;{GROUP}:0"
EXPECTED = {
    "temperature": {"temperature"},
    "pressure": {"pressure"},
    "climate": {"temperature", "humidity"},
}
DISH_LINE = re.compile(r"dish (\S+) \[([^\]]*)\]: received (\d+) \((.*)\)")
SENT_LINE = re.compile(r"radio: sent (\d+) \((.*)\)")


def multicast_loopback_problem() -> str | None:
    """Why multicast on the loopback interface does not work here, or None if it does."""
    try:
        with (
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver,
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender,
        ):
            receiver.bind(("0.0.0.0", 0))
            mreq = socket.inet_aton(GROUP) + socket.inet_aton("127.0.0.1")
            receiver.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
            sender.setsockopt(
                socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton("127.0.0.1")
            )
            sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, struct.pack("b", 1))
            sender.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
            port = receiver.getsockname()[1]
            for _ in range(3):  # udp may lose one; three tries, one second each at most
                sender.sendto(b"probe", (GROUP, port))
                readable, _, _ = select.select([receiver], [], [], 1.0)
                if readable and receiver.recv(64) == b"probe":
                    return None
            return f"a datagram sent to {GROUP} on 127.0.0.1 never came back"
    except OSError as exc:
        return f"multicast on the loopback interface failed: {exc}"


@pytest.fixture(scope="module", autouse=True)
def _needs_multicast_loopback() -> None:
    problem = multicast_loopback_problem()
    if problem is not None:
        pytest.skip(f"no multicast on loopback on this machine ({problem})")


def parse_summary(output: str) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """(sent per group, received per group per dish) from the example's summary."""

    def counts(text: str) -> dict[str, int]:
        if text == "nothing":
            return {}
        pairs = (item.rsplit(" ", 1) for item in text.split(", "))
        return {group: int(n) for group, n in pairs}

    sent_match = SENT_LINE.search(output)
    assert sent_match, output
    sent = counts(sent_match[2])
    assert sum(sent.values()) == int(sent_match[1])
    dishes = {}
    for match in DISH_LINE.finditer(output):
        received = counts(match[4])
        assert sum(received.values()) == int(match[3])
        assert set(match[2].split(",")) == EXPECTED[match[1]], match[0]
        dishes[match[1]] = received
    assert set(dishes) == set(EXPECTED), output
    return sent, dishes


def check_groups(sent: dict[str, int], dishes: dict[str, dict[str, int]]) -> None:
    """Each dish got only its groups, some of each, never more than was sent."""
    for name, received in dishes.items():
        assert set(received) == EXPECTED[name], (name, received)
        for group, n in received.items():
            assert 0 < n <= sent[group], (name, group, n, sent)


def test_dishes_receive_only_their_groups() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--endpoint", ENDPOINT, "--count", "10", "--rate", "50"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 0, proc.stderr
    sent, dishes = parse_summary(proc.stdout)
    assert sent == {group: 10 for group in ("temperature", "pressure", "humidity")}
    check_groups(sent, dishes)
    # every line a dish printed is one of its own groups
    for name, group in re.findall(r"^  \[(\w+)\] (\w+): ", proc.stdout, re.MULTILINE):
        assert group in EXPECTED[name], (name, group)


async def test_sigterm_midway_exits_zero() -> None:
    with trio.fail_after(30):
        proc = await trio.lowlevel.open_process(
            [sys.executable, str(EXAMPLE), "--endpoint", ENDPOINT, "--rate", "50"],
            stdout=subprocess.PIPE,
        )
        assert proc.stdout is not None
        output = bytearray()
        try:
            # run until every dish has printed something, then interrupt
            seen: set[str] = set()
            while seen != set(EXPECTED):
                chunk = await proc.stdout.receive_some(4096)
                assert chunk, f"the example ended early: {bytes(output)!r}"
                output += chunk
                seen = {name.decode() for name in re.findall(rb"^  \[(\w+)\] ", output, re.M)}
            proc.send_signal(signal.SIGTERM)
            while chunk := await proc.stdout.receive_some(4096):
                output += chunk
            assert await proc.wait() == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    text = output.decode()
    assert "SIGTERM: shutting down" in text
    sent, dishes = parse_summary(text)
    check_groups(sent, dishes)
