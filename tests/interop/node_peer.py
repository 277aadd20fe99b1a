"""Run ``tests/node/peer.js`` (zeromq.js 6: libzmq 4.3.5 with the draft sockets) from trio.

:func:`node_peer` starts one peer as a subprocess and yields a :class:`NodePeer`
whose :meth:`~NodePeer.line` reads its JSON output lines; on exit the process is
killed if it is still running. The peer always exits by itself too (``--timeout``).
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

ROOT = Path(__file__).resolve().parents[2]
PEER = ROOT / "tests" / "node" / "peer.js"
NODE = shutil.which("node")

#: skip marks for a module that needs the Node peer
requires_node = [
    pytest.mark.skipif(NODE is None, reason="node is not on PATH"),
    pytest.mark.skipif(
        not (ROOT / "node_modules" / "zeromq").is_dir(),
        reason="node_modules/zeromq is missing: run `make node_modules/.installed` (npm ci)",
    ),
]


def free_tcp_port() -> int:
    """A tcp port nobody listens on now (for a peer that binds no port 0: libzmq's ws)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class NodePeer:
    """A running peer.js: its JSON output lines, its stderr and its exit code."""

    def __init__(self, process: trio.Process, args: tuple[str, ...]) -> None:
        self.process = process
        self.args = args
        self.lines: list[dict[str, Any]] = []
        self.stderr = b""
        self._buffer = b""
        self._stderr_done = trio.Event()

    def __repr__(self) -> str:
        return f"<node peer.js {' '.join(self.args)}>"

    async def line(self) -> dict[str, Any]:
        """The next JSON line; AssertionError (with stderr) if the peer ends first."""
        stdout = self.process.stdout
        assert stdout is not None
        while b"\n" not in self._buffer:
            chunk = await stdout.receive_some(65536)
            if not chunk:
                await self.wait()
                raise AssertionError(
                    f"{self!r} ended (code {self.process.returncode}) without more output: "
                    f"{self.stderr.decode(errors='replace')}"
                )
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\n", 1)
        parsed: dict[str, Any] = json.loads(raw)
        self.lines.append(parsed)
        return parsed

    async def ready(self) -> list[str]:
        """The endpoints of the peer's ``{"ready": [...]}`` line (tcp port 0 resolved)."""
        first = await self.line()
        assert "ready" in first, first
        return list(first["ready"])

    async def message(self) -> dict[str, Any]:
        """The next received-message line (``group``/``body``/``routing_id`` decoded)."""
        parsed = await self.line()
        assert "body" in parsed, parsed
        decoded: dict[str, Any] = {"body": bytes.fromhex(parsed["body"])}
        if "group" in parsed:
            decoded["group"] = bytes.fromhex(parsed["group"])
        if "routing_id" in parsed:
            decoded["routing_id"] = parsed["routing_id"]
        return decoded

    async def wait(self) -> int:
        """Wait for the exit code (and the whole of stderr)."""
        code = await self.process.wait()
        await self._stderr_done.wait()
        return code

    async def done(self) -> None:
        """Expect ``{"done": true}`` and a clean exit (code 0); let a ``--stay`` peer go."""
        rest = await self.line()
        assert rest == {"done": True}, rest
        if "--stay" in self.args and self.process.stdin is not None:
            await self.process.stdin.aclose()
        code = await self.wait()
        assert code == 0, f"{self!r} exited {code}: {self.stderr.decode(errors='replace')}"

    async def _read_stderr(self) -> None:
        stderr = self.process.stderr
        assert stderr is not None
        try:
            while chunk := await stderr.receive_some(65536):
                self.stderr += chunk
        finally:
            self._stderr_done.set()


@asynccontextmanager
async def node_peer(*args: str, timeout_ms: int = 8000) -> AsyncIterator[NodePeer]:
    """Run ``node peer.js ARGS --timeout TIMEOUT_MS``; kill it on exit if still running."""
    assert NODE is not None
    full = (*args, "--timeout", str(timeout_ms))
    process = await trio.lowlevel.open_process(
        [NODE, str(PEER), *full],
        stdin=subprocess.PIPE,  # a --stay peer exits when it closes
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    peer = NodePeer(process, full)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer._read_stderr)
            try:
                yield peer
            finally:
                with trio.CancelScope(shield=True):
                    if process.returncode is None:
                        process.kill()
                    await process.wait()
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with trio.CancelScope(shield=True):
                    await stream.aclose()
