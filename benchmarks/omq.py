"""pyomq (omq.rs's Python binding) as a benchmark column, in its own interpreter.

pyomq needs Python >= 3.12, so its workers cannot be ``multiprocessing`` children of a
suite that runs on an older interpreter: :class:`OmqProcess` starts one in the omq
interpreter (:func:`omq_python`: ``$TRIZMQ_OMQ_PYTHON``, else the ``.venv-omq`` that
``make venv-omq`` builds) and speaks to it over a socket pair wrapped in a
``multiprocessing.connection.Connection``, so :class:`benchmarks.run.Processes` treats it
as any worker (its ``sentinel`` is a pidfd). The child runs :func:`main`: it binds the
name ``zmq`` to pyomq ("a drop-in pyzmq replacement on the common path", and used so)
and runs the pyzmq sync workers of ``benchmarks/workers.py`` unchanged, so both columns
measure the same loops.

    python -m benchmarks.omq FD SPEC_JSON     (what OmqProcess runs; not for people)
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from functools import cache
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: the venv ``make venv-omq`` builds
VENV_PYTHON = ROOT / ".venv-omq" / "bin" / "python"


def omq_python() -> str | None:
    """The interpreter that imports pyomq, or None (the pyomq column is then skipped)."""
    named = os.environ.get("TRIZMQ_OMQ_PYTHON")
    if named:
        return named
    return str(VENV_PYTHON) if VENV_PYTHON.is_file() else None


@cache
def versions() -> dict[str, str] | None:
    """``{"pyomq": ..., "python": ...}`` of the omq interpreter, or None without one."""
    python = omq_python()
    if python is None:
        return None
    probe = "import json, platform, pyomq; "
    probe += "print(json.dumps({'pyomq': pyomq.__version__, 'python': platform.python_version()}))"
    try:
        done = subprocess.run(
            [python, "-c", probe], capture_output=True, text=True, timeout=60, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    found: dict[str, str] = json.loads(done.stdout)
    return found


class OmqProcess:
    """One worker in the omq interpreter, with the face of a ``multiprocessing.Process``
    that :class:`benchmarks.run.Processes` uses."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.popen: subprocess.Popen[bytes] | None = None
        self.sentinel = -1
        self.parent: Connection | None = None

    def start(self) -> Connection:
        """Start the worker; returns the parent's end of its pipe."""
        python = omq_python()
        assert python is not None, "no omq interpreter"
        ours, theirs = socket.socketpair()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        with theirs:
            self.popen = subprocess.Popen(
                [python, "-m", "benchmarks.omq", str(theirs.fileno()), json.dumps(self.spec)],
                pass_fds=(theirs.fileno(),),
                cwd=ROOT,
                env=env,
            )
        self.sentinel = os.pidfd_open(self.popen.pid)
        self.parent = Connection(ours.detach())
        return self.parent

    @property
    def exitcode(self) -> int | None:
        return None if self.popen is None else self.popen.poll()

    def is_alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def join(self, timeout: float | None = None) -> None:
        if self.popen is None:
            return
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return
        if self.sentinel >= 0:
            os.close(self.sentinel)
            self.sentinel = -1

    def kill(self) -> None:
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()


def main(argv: list[str]) -> None:
    """The worker's side: run one pyzmq sync role with ``zmq`` bound to pyomq."""
    import pyomq

    sys.modules["zmq"] = pyomq
    from benchmarks import workers

    fd, spec = int(argv[0]), json.loads(argv[1])
    workers.main(Connection(fd), dict(spec, impl="pyzmq"))


if __name__ == "__main__":
    main(sys.argv[1:])
