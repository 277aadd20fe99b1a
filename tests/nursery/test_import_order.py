"""Every import inside ``trizmq.nursery`` points down one order.

A child actor gets its parent as a Protocol of ``trizmq.nursery.parents``, never as
its parent's class; this pins the order that follows (``docs/architecture.md``, "the
order inside the runtime"), counting every import: at module level, under
``TYPE_CHECKING`` and inside functions.
"""

from __future__ import annotations

import ast
from pathlib import Path

import trizmq.nursery

#: top to bottom; a module imports only from the layers below its own
ORDER = [
    {"runtime"},
    {"acceptor", "connecter"},
    {"connection", "counting"},
    {"heartbeat", "writer"},
    {"reader"},
    {"fastpath"},
    {"parents"},
    {"handshake"},
    {"peers", "slots"},
    {"pipe"},
    {"waiters"},
]

#: imports up the order that are known and owed: none
KNOWN_UPWARD: set[tuple[str, str]] = set()

NURSERY = Path(trizmq.nursery.__file__).parent


def _layer_of(name: str) -> int:
    for index, layer in enumerate(ORDER):
        if name in layer:
            return index
    raise AssertionError(f"trizmq.nursery.{name} has no place in ORDER")


def _top_name(path: Path) -> str:
    """The nursery module (or subpackage) a file belongs to: ``fastpath`` for both
    ``fastpath.py`` and ``fastpath/*.py``."""
    return path.relative_to(NURSERY).parts[0].removesuffix(".py")


def _imported(path: Path) -> set[str]:
    """The nursery modules ``path`` imports, by their top name."""
    # the package a relative import of this file starts from, below trizmq.nursery
    package = path.relative_to(NURSERY).parts[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ["trizmq", "nursery", *package]
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            names = [f"{module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name.startswith("trizmq.nursery."):
                found.add(name.split(".")[2])
    return found


def test_every_nursery_module_has_a_place() -> None:
    modules = {_top_name(path) for path in NURSERY.rglob("*.py")} - {"__init__"}
    for name in modules:
        _layer_of(name)


def test_nursery_imports_point_down() -> None:
    upward = []
    for path in sorted(NURSERY.rglob("*.py")):
        importer = _top_name(path)
        if importer == "__init__":
            continue
        for imported in _imported(path):
            if imported == importer or (importer, imported) in KNOWN_UPWARD:
                continue
            if _layer_of(imported) <= _layer_of(importer):
                upward.append(f"{path.relative_to(NURSERY)} imports {imported}")
    assert upward == []
