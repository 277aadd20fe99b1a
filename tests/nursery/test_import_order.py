"""Every import inside ``trizmq.nursery`` points down one order.

A child actor gets its parent as a Protocol of ``trizmq.nursery.parents``, never as
its parent's class; this pins the order that follows (``docs/architecture.md``, "the
order inside the runtime"), counting every import: at module level, under
``TYPE_CHECKING`` and inside functions. The fast path's package counts as one entry
there, and has an order of its own inside (:data:`FASTPATH_ORDER`).
"""

from __future__ import annotations

import ast
from pathlib import Path

import trizmq.nursery

#: top to bottom; a module imports only from the layers below its own
ORDER = [
    {"runtime"},
    {"acceptor", "connecter"},
    {"connection_actor", "counting"},
    {"writer"},
    {"reader"},
    {"fastpath"},
    {"parents"},
    {"heartbeat", "handshake_io"},
    {"peers", "slots"},
    {"pipe"},
    {"waiters"},
]

#: inside ``trizmq.nursery.fastpath``, top to bottom (``__init__`` is the package, the
#: switch): a file names an object of a file above it by a Protocol of what it uses
FASTPATH_ORDER = [
    {"socket_state"},
    {"write_through"},
    {"direct_io", "tls_input"},
    {"read_through"},
    {"instrument"},
    {"hot_paths"},
    {"trio_probe"},
    {"__init__"},
]

#: imports up the order that are known and owed: none
KNOWN_UPWARD: set[tuple[str, str]] = set()

NURSERY = Path(trizmq.nursery.__file__).parent
FASTPATH = NURSERY / "fastpath"


def _layer_of(name: str) -> int:
    for index, layer in enumerate(ORDER):
        if name in layer:
            return index
    raise AssertionError(f"trizmq.nursery.{name} has no place in ORDER")


def _top_name(path: Path) -> str:
    """The nursery module (or subpackage) a file belongs to: ``fastpath`` for both
    ``fastpath.py`` and ``fastpath/*.py``."""
    return path.relative_to(NURSERY).parts[0].removesuffix(".py")


def _imported_names(path: Path) -> set[str]:
    """The dotted names ``path`` imports (``from m import n``: ``m.n``), relative
    imports resolved."""
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
        found.update(names)
    return found


def _imported(path: Path) -> set[str]:
    """The nursery modules ``path`` imports, by their top name."""
    return {
        name.split(".")[2] for name in _imported_names(path) if name.startswith("trizmq.nursery.")
    }


def _fastpath_imported(path: Path) -> set[str]:
    """The fast path's files ``path`` imports, by name (``__init__``: the package)."""
    parts = {path.stem for path in FASTPATH.glob("*.py")}
    found = set()
    for name in _imported_names(path):
        if name.startswith("trizmq.nursery.fastpath."):
            part = name.split(".")[3]
            found.add(part if part in parts else "__init__")
        elif name == "trizmq.nursery.fastpath":
            found.add("__init__")
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


def _fastpath_layer_of(name: str) -> int:
    for index, layer in enumerate(FASTPATH_ORDER):
        if name in layer:
            return index
    raise AssertionError(f"trizmq.nursery.fastpath.{name} has no place in FASTPATH_ORDER")


def test_every_fast_path_file_has_a_place() -> None:
    for path in FASTPATH.glob("*.py"):
        _fastpath_layer_of(path.stem)


def test_fast_path_imports_point_down() -> None:
    upward = []
    for path in sorted(FASTPATH.glob("*.py")):
        for imported in _fastpath_imported(path):
            if imported != path.stem and _fastpath_layer_of(imported) <= _fastpath_layer_of(
                path.stem
            ):
                upward.append(f"fastpath/{path.name} imports {imported}")
    assert upward == []


def test_the_fast_path_order_check_sees_the_package_and_its_files() -> None:
    # the switch is read off the package; the parts are named by their files
    assert _fastpath_imported(FASTPATH / "trio_probe.py") == {"__init__"}
    assert _fastpath_imported(FASTPATH / "socket_state.py") >= {"instrument", "read_through"}
