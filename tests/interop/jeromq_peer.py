"""Run ``tests/jeromq/Peer.java`` (JeroMQ 0.3.6: ZMTP 2.0) from trio.

Debian's ``libjeromq-java`` puts the jar at ``/usr/share/java/jeromq.jar``
(``TRIZMQ_JEROMQ_JAR`` names another). :func:`compiled_peer` compiles Peer.java once
with ``javac`` into ``build/jeromq/`` (git-ignored), in a directory named by the
source's hash, so a second run, or a second suite running beside this one, finds it
made; :func:`jeromq_peer` starts one peer as a subprocess and yields a
:class:`JeromqPeer` reading its JSON lines (the protocol of ``tests/node/peer.js``,
whose reader it reuses). The peer always exits by itself too (``--timeout``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from .node_peer import NodePeer

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "jeromq" / "Peer.java"
BUILD = ROOT / "build" / "jeromq"
JAR = Path(os.environ.get("TRIZMQ_JEROMQ_JAR", "/usr/share/java/jeromq.jar"))
JAVA = shutil.which("java")
JAVAC = shutil.which("javac")

#: skip marks for a module that needs the JeroMQ peer
requires_jeromq = [
    pytest.mark.skipif(JAVA is None or JAVAC is None, reason="java or javac is not on PATH"),
    pytest.mark.skipif(
        not JAR.is_file(),
        reason=f"{JAR} is missing: `apt-get install libjeromq-java` (or `make jeromq`), "
        "or name the jar in TRIZMQ_JEROMQ_JAR",
    ),
]


def compiled_peer() -> Path:
    """The directory holding Peer.class for this Peer.java, compiled if it is not yet."""
    digest = hashlib.sha256(SOURCE.read_bytes() + str(JAR).encode()).hexdigest()[:16]
    target = BUILD / digest
    if (target / "Peer.class").is_file():
        return target
    assert JAVAC is not None
    BUILD.mkdir(parents=True, exist_ok=True)
    # compiled aside and renamed into place whole: a suite beside this one never
    # sees half a build
    work = Path(tempfile.mkdtemp(prefix="javac-", dir=BUILD))
    try:
        result = subprocess.run(
            [JAVAC, "-nowarn", "-cp", str(JAR), "-d", str(work), str(SOURCE)],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if result.returncode != 0:
            raise AssertionError(f"javac failed on {SOURCE.name}:\n{result.stderr}")
        try:
            work.rename(target)
        except OSError:
            if not (target / "Peer.class").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


class JeromqPeer(NodePeer):
    """A running Peer.java: its JSON output lines, its stderr and its exit code."""

    #: set once the test is done with the peer: its exit, or its kill, is expected
    closing = False

    def __repr__(self) -> str:
        return f"<jeromq Peer.java {' '.join(self.args)}>"

    async def _fail_on_error_exit(self) -> None:
        code = await self.wait()
        if code != 0 and not self.closing:
            raise AssertionError(
                f"{self!r} exited {code} before the test was done: "
                f"{self.stderr.decode(errors='replace')}"
            )

    async def done(self) -> None:
        """Expect ``{"done": true}`` and a clean exit; a ``--forever`` sender is told to
        stop first (its stdin closed)."""
        if "--forever" in self.args and self.process.stdin is not None:
            await self.process.stdin.aclose()
        await super().done()

    async def message(self) -> dict[str, Any]:
        """The next received-message line: ``body`` and ``frames`` decoded."""
        parsed = await self.line()
        assert "body" in parsed, parsed
        return {
            "body": bytes.fromhex(parsed["body"]),
            "frames": [bytes.fromhex(frame) for frame in parsed["frames"]],
        }


@asynccontextmanager
async def jeromq_peer(
    classes: Path, *args: str, timeout_ms: int = 40000
) -> AsyncIterator[JeromqPeer]:
    """Run ``java Peer ARGS --timeout TIMEOUT_MS``; kill it on exit if still running.

    A peer that exits with an error before the test is done (its ``--timeout`` run
    out, an exception) fails the test at once, with its stderr, instead of leaving
    the test to wait on trizmq for a message that will never come. TIMEOUT_MS is
    generous (a JVM shares two loaded cores with Spark's and two suites in ``make
    test``) and under the tests' own 60 s bound."""
    assert JAVA is not None
    full = (*args, "--timeout", str(timeout_ms))
    process = await trio.lowlevel.open_process(
        [JAVA, "-cp", os.pathsep.join((str(JAR), str(classes))), "Peer", *full],
        stdin=subprocess.PIPE,  # a --stay or --forever peer stops when it closes
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    peer = JeromqPeer(process, full)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer._read_stderr)
            nursery.start_soon(peer._fail_on_error_exit)
            try:
                yield peer
            finally:
                peer.closing = True
                with trio.CancelScope(shield=True):
                    if process.returncode is None:
                        process.kill()
                    await process.wait()
                nursery.cancel_scope.cancel()
    finally:
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                with trio.CancelScope(shield=True):
                    await stream.aclose()
