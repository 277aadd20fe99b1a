"""Run ``tests/omq/peer.py`` (omq.rs through pyomq, in its own interpreter) from trio.

:func:`omq_peer` starts one peer as a subprocess of the omq interpreter
(``tests/omq_python.py``) and yields an :class:`OmqPeer`, which reads its JSON lines
as :class:`~tests.interop.node_peer.NodePeer` reads peer.js's (the two scripts share
their options and output); on exit the process is killed if it is still running.
The peer always exits by itself too (``--timeout``).
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from omq_python import omq_python

from .node_peer import ROOT, NodePeer

PEER = ROOT / "tests" / "omq" / "peer.py"
PYTHON = omq_python()

#: the skip mark of a module that needs the omq.rs peer
requires_omq = pytest.mark.skipif(
    PYTHON is None,
    reason="no omq.rs interpreter: `make .venv-omq/.installed` builds one from a Python "
    ">= 3.12 (pyomq needs 3.12), or set TRIZMQ_OMQ_PYTHON to one that imports pyomq",
)


class OmqPeer(NodePeer):
    """A running peer.py: its JSON lines (messages and, with ``--monitor``, events)."""

    def __repr__(self) -> str:
        return f"<omq peer.py {' '.join(self.args)}>"

    async def ready(self) -> list[str]:
        """The endpoints of the peer's ``{"ready": [...]}`` line (monitor events before
        it are kept)."""
        while True:
            parsed = await self.line()
            if "event" not in parsed:
                assert "ready" in parsed, parsed
                return list(parsed["ready"])

    async def event(self, name: str) -> dict[str, Any]:
        """The next monitor event called ``name`` (other lines are kept in ``lines``)."""
        while True:
            parsed = await self.line()
            if parsed.get("event") == name:
                return parsed

    async def message_line(self) -> dict[str, Any]:
        """The next received-message line (monitor events on the way are kept)."""
        while True:
            parsed = await self.line()
            if "body" in parsed or "frames" in parsed:
                return parsed

    async def done(self) -> None:
        """Expect ``{"done": true}`` (after any monitor events) and a clean exit; let a
        ``--stay`` peer go."""
        while True:
            rest = await self.line()
            if "event" not in rest:
                break
        assert rest == {"done": True}, rest
        if "--stay" in self.args and self.process.stdin is not None:
            await self.process.stdin.aclose()
        code = await self.wait()
        assert code == 0, f"{self!r} exited {code}: {self.stderr.decode(errors='replace')}"

    def events(self) -> list[str]:
        """The names of the monitor events read so far."""
        return [line["event"] for line in self.lines if "event" in line]


@asynccontextmanager
async def omq_peer(*args: str, timeout_ms: int = 8000) -> AsyncIterator[OmqPeer]:
    """Run ``peer.py ARGS --timeout TIMEOUT_MS``; kill it on exit if still running."""
    assert PYTHON is not None
    full = (*args, "--timeout", str(timeout_ms))
    process = await trio.lowlevel.open_process(
        [PYTHON, str(PEER), *full],
        stdin=subprocess.PIPE,  # a --stay peer exits when it closes
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    peer = OmqPeer(process, full)
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
