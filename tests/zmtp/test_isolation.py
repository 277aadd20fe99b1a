"""``trizmq.zmtp`` is sans-I/O: it never imports trio nor the rest of trizmq."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "trizmq"

# The parent package is replaced by a bare module so that trizmq/__init__.py (which
# imports the trio runtime) does not run: what is measured is zmtp's own imports.
PROBE = """
import sys, types
parent = types.ModuleType("trizmq")
parent.__path__ = [sys.argv[1]]
sys.modules["trizmq"] = parent
import trizmq.zmtp
assert "trio" not in sys.modules, "trio was imported"
others = sorted(
    m for m in sys.modules
    if m.startswith("trizmq.") and not m.startswith("trizmq.zmtp") and m != "trizmq._errors"
)
assert not others, others
"""


def test_importing_zmtp_does_not_import_trio() -> None:
    subprocess.run([sys.executable, "-c", PROBE, str(PACKAGE)], check=True)


def test_zmtp_sources_import_no_trio() -> None:
    for path in sorted((PACKAGE / "zmtp").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level == 2:
                    assert node.module == "_errors", (path.name, node.module)
                assert node.level < 3, path.name
                names = [node.module or ""]
            else:
                continue
            for name in names:
                assert name.split(".")[0] not in {"trio", "trizmq"}, (path.name, name)
