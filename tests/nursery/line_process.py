"""A child Python process that a test talks to in lines: it reads commands on its
stdin and prints what it saw on its stdout (the flood client, the subscription
victim). Closing its stdin is how it is told to stop."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress

import trio


class LineProcess:
    """A child process, with a line reader for what it prints."""

    def __init__(self, process: trio.Process, name: str) -> None:
        self.process = process
        self.name = name
        self._buffer = b""

    async def line(self) -> str:
        """The next line the child prints (failing if it exits first)."""
        return await self._next(f"the {self.name} exited early")

    async def expect(self, line: str) -> str:
        """Read lines until one starting with ``line``; return it."""
        while True:
            text = await self._next(f"the {self.name} exited before printing {line!r}")
            if text.startswith(line):
                return text

    async def tell(self, line: str) -> None:
        """Write ``line`` to the child's stdin."""
        assert self.process.stdin is not None
        await self.process.stdin.send_all(line.encode() + b"\n")

    async def _next(self, early: str) -> str:
        assert self.process.stdout is not None
        while True:
            head, sep, rest = self._buffer.partition(b"\n")
            if sep:
                self._buffer = rest
                return head.decode()
            data = await self.process.stdout.receive_some(4096)
            assert data, early
            self._buffer += data


@asynccontextmanager
async def line_process(argv: Sequence[str], name: str) -> AsyncIterator[LineProcess]:
    """Run ``argv`` with pipes to its stdin and stdout; on the way out close its stdin
    (EOF: it cleans up and exits), wait up to 10 s for it, then kill it."""
    process = await trio.lowlevel.open_process(
        list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        yield LineProcess(process, name)
    finally:
        with trio.CancelScope(shield=True):
            assert process.stdin is not None
            with suppress(trio.BrokenResourceError, trio.ClosedResourceError):
                await process.stdin.aclose()
            with trio.move_on_after(10):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
            assert process.stdout is not None
            await process.stdout.aclose()
