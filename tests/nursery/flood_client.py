"""A flood of TCP connections that never finish a ZMTP greeting, run as a script by tests.

    python flood_client.py HOST PORT COUNT MODE SOURCE [RATE]

* ``MODE`` ``silent``: the connections send nothing; ``trickle``: each sends one more
  byte of a NULL greeting every 0.5 s (never all 64 of them).
* ``SOURCE``: the local address the connections come from (``127.0.0.2`` is another
  address of the loopback on Linux).
* ``RATE``: at most this many connections opened per second (1000 by default).

It keeps ``COUNT`` connections open: each one the server closes (reset or EOF) is
replaced by a new one, so the pressure lasts. Lines on stdout: ``flooding`` once
``COUNT`` connections have been opened, and at the end ``closed N opened M`` (N: the
connections the server closed). On
stdin, a line ``stop`` stops the replacing: it then prints ``all closed`` once the
server has closed every remaining connection by itself (the flood keeps trickling);
EOF on stdin ends it at once, resetting what is left.
"""

from __future__ import annotations

import resource
import selectors
import socket
import struct
import sys
import time

GREETING_START = b"\xff" + b"\x00" * 7 + b"\x01\x7f\x03\x01" + b"NULL".ljust(20, b"\x00")
TRICKLE_EVERY = 0.5


def main() -> None:
    host, port, count, mode, source = sys.argv[1:6]
    rate = float(sys.argv[6]) if len(sys.argv) > 6 else 1000.0
    address = (host, int(port))
    total = int(count)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < total + 100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(total + 100, hard), hard))

    selector = selectors.DefaultSelector()
    selector.register(sys.stdin, selectors.EVENT_READ, None)
    live: dict[socket.socket, int] = {}  # socket -> greeting bytes sent
    opened = closed = 0
    replacing = True
    announced = reported = False
    budget = 0.0
    last = time.monotonic()
    next_trickle = last + TRICKLE_EVERY

    def open_one() -> None:
        nonlocal opened
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.bind((source, 0))
        sock.connect_ex(address)
        live[sock] = 0
        selector.register(sock, selectors.EVENT_READ, sock)
        opened += 1

    def drop(sock: socket.socket, by_server: bool = True) -> None:
        nonlocal closed
        selector.unregister(sock)
        del live[sock]
        # a reset: no TIME_WAIT pile-up on the test machine
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        closed += by_server

    while True:
        now = time.monotonic()
        budget = min(budget + (now - last) * rate, rate / 10)
        last = now
        while replacing and len(live) < total and budget >= 1:
            open_one()
            budget -= 1
        if not announced and opened >= total:
            announced = True
            print("flooding", flush=True)
        if not replacing and not live and not reported:
            reported = True
            print("all closed", flush=True)
        if mode == "trickle" and now >= next_trickle:
            next_trickle = now + TRICKLE_EVERY
            for sock, sent in list(live.items()):
                if sent >= len(GREETING_START):
                    continue
                try:
                    sock.send(GREETING_START[sent : sent + 1])
                    live[sock] = sent + 1
                except BlockingIOError:
                    pass  # still connecting
                except OSError:
                    drop(sock)
        for key, _ in selector.select(timeout=0.01):
            sock = key.data
            if sock is None:
                line = sys.stdin.readline()
                if not line:
                    for other in list(live):
                        drop(other, by_server=False)
                    print(f"closed {closed} opened {opened}", flush=True)
                    return
                if line.strip() == "stop":
                    replacing = False
                continue
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                drop(sock)
                continue
            if not data:
                drop(sock)


if __name__ == "__main__":
    main()
