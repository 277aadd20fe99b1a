"""Where the omq.rs peer's interpreter is: a Python >= 3.12 with pyomq installed.

``make test`` builds ``.venv-omq/`` (the first Python >= 3.12 it finds, with pyomq)
where such a Python exists; ``TRIZMQ_OMQ_PYTHON`` names another interpreter instead.
Tests that need omq.rs skip with the reason where :func:`omq_python` is None.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the interpreter ``make test`` builds (see the Makefile's omq venv)
VENV_PYTHON = ROOT / ".venv-omq" / "bin" / "python"


def omq_python() -> str | None:
    """The interpreter that imports pyomq: ``$TRIZMQ_OMQ_PYTHON``, else the omq venv's,
    else None."""
    named = os.environ.get("TRIZMQ_OMQ_PYTHON")
    if named:
        return named
    return str(VENV_PYTHON) if VENV_PYTHON.is_file() else None
