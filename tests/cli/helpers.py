"""Helpers of the command-line tests: run the real ``trizmq`` console script."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

#: the console script installed next to this interpreter (``pip install -e .``)
TRIZMQ = Path(sys.executable).parent / "trizmq"

#: seconds any one command may run before the test fails
RUN_TIMEOUT = 30.0


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["NO_COLOR"] = "1"
    return env


def run_cli(
    *args: str, input: bytes | None = None, timeout: float = RUN_TIMEOUT, cwd: Path | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run ``trizmq ARGS`` to completion and return it (stdout and stderr captured)."""
    return subprocess.run(
        [str(TRIZMQ), *args],
        input=input if input is not None else b"",
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
        env=_env(),
    )


def start_cli(
    *args: str, cwd: Path | None = None, stdin: Any = subprocess.DEVNULL
) -> subprocess.Popen[bytes]:
    """Start ``trizmq ARGS`` in the background (stdout and stderr are pipes)."""
    return subprocess.Popen(
        [str(TRIZMQ), *args],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=_env(),
    )


def bound_endpoint(proc: subprocess.Popen[bytes]) -> str:
    """The endpoint a command announced on stderr after binding a port-0 endpoint."""
    assert proc.stderr is not None
    line = proc.stderr.readline().decode()
    assert line.startswith("trizmq: bound "), line
    return line.split()[-1]


def free_port() -> int:
    """A tcp port nobody listens on right now (for commands that bind a fixed port)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_one_line_error(result: subprocess.CompletedProcess[bytes]) -> str:
    """A failed command: non-zero status, exactly one line on stderr, no traceback."""
    err = result.stderr.decode()
    assert result.returncode != 0, (result.returncode, err)
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()
