"""``python -m benchmarks``: see benchmarks/run.py."""

from __future__ import annotations

import sys

from benchmarks.run import run

if __name__ == "__main__":
    sys.exit(run())
