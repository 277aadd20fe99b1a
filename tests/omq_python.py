"""The interpreter of the omq.rs peers: a Python >= 3.12 with pyomq installed.

pyomq (omq.rs's binding) needs Python >= 3.12, and the suite may run on an older
one, so omq.rs peers run in their own process under that interpreter: the
repository's ``.venv-omq/`` (``python3.12 -m venv .venv-omq && .venv-omq/bin/pip
install pyomq``; ``make test`` builds it where such a Python exists), or the one
``TRIZMQ_OMQ_PYTHON`` names. A test that needs omq.rs skips with the reason where
:func:`omq_python` is None.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["OMQ_VENV_PYTHON", "omq_python"]

#: the omq venv's interpreter, in the repository
OMQ_VENV_PYTHON = Path(__file__).resolve().parents[1] / ".venv-omq" / "bin" / "python"


def omq_python() -> str | None:
    """``$TRIZMQ_OMQ_PYTHON`` if set, else the omq venv's interpreter if it exists,
    else None."""
    named = os.environ.get("TRIZMQ_OMQ_PYTHON")
    if named:
        return named
    return str(OMQ_VENV_PYTHON) if OMQ_VENV_PYTHON.is_file() else None
