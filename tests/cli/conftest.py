"""Fixtures of the command-line tests: the real ``trizmq`` console script, pyzmq peers."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator

import pytest
import zmq

from .helpers import TRIZMQ


@pytest.fixture(autouse=True)
def _needs_script() -> None:
    if not TRIZMQ.exists():
        pytest.skip(f"the trizmq console script is not installed ({TRIZMQ.name}): pip install -e .")


@pytest.fixture
def zsock() -> Iterator[Callable[[int], zmq.Socket[bytes]]]:
    """Factory of pyzmq sockets with RCVTIMEO/SNDTIMEO/LINGER set; all closed at the end."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    made: list[zmq.Socket[bytes]] = []

    def factory(kind: int) -> zmq.Socket[bytes]:
        sock = ctx.socket(kind)
        sock.rcvtimeo = 10_000
        sock.sndtimeo = 10_000
        sock.linger = 0
        made.append(sock)
        return sock

    try:
        yield factory
    finally:
        for sock in made:
            sock.close(linger=0)
        ctx.term()


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Background commands of a test: killed at the end if they are still running."""
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        for stream in (proc.stdout, proc.stderr, proc.stdin):
            if stream is not None:
                stream.close()
