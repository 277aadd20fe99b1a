"""The ``trizmq`` console script's first step: a Ctrl-C while trizmq is still being
imported ends the command quietly (status 130), as one later does (``trizmq.cli``)."""

from __future__ import annotations

import signal
import sys
from types import FrameType


def _interrupted(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("\n")
    sys.exit(128 + signum)


def main() -> None:
    """Import the command line with Ctrl-C made quiet, then run it."""
    previous = signal.signal(signal.SIGINT, _interrupted)
    from trizmq.cli import main as run

    signal.signal(signal.SIGINT, previous)
    run()
