"""The house rules that keep the layers apart, checked on the source.

* Transports plug in through one table (``trizmq.transport``): the runtime, the
  routing layer and the socket classes never name a scheme, and never ask a peer
  which kind of transport it came through.
* The fast path is one module with one switch (``trizmq.nursery.fastpath``):
  nothing else touches raw descriptors.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import trizmq
from trizmq import transport
from trizmq.transport import MessageTransport, StreamTransport

PACKAGE = Path(trizmq.__file__).parent
#: the layers that must not know which transports exist
AGNOSTIC = [
    *sorted((PACKAGE / "nursery").glob("*.py")),
    *sorted((PACKAGE / "patterns").rglob("*.py")),
    PACKAGE / "_socket.py",
    PACKAGE / "_lifecycle.py",
    PACKAGE / "_sockets.py",
]


def strings_in_code(path: Path) -> list[tuple[int, str]]:
    """String constants of a module that are not docstrings."""
    tree = ast.parse(path.read_text())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


@pytest.mark.parametrize("path", AGNOSTIC, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_scheme_is_named_outside_the_transport_layer(path: Path) -> None:
    schemes = set(transport.schemes())
    named = [(line, text) for line, text in strings_in_code(path) if text in schemes]
    assert not named, f"{path.name} names transports: {named}"


@pytest.mark.parametrize("path", AGNOSTIC, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_peer_kind_strings(path: Path) -> None:
    source = path.read_text()
    assert ".kind" not in source, f"{path.name} asks a peer for its kind"


def test_one_table_with_every_built_in_transport() -> None:
    assert transport.schemes()[:4] == ["tcp", "ipc", "inproc", "udp"]
    for scheme in ("tcp", "ipc"):
        assert isinstance(transport.transport_for(scheme), StreamTransport)
    for scheme in ("inproc", "udp"):
        assert isinstance(transport.transport_for(scheme), MessageTransport)


def test_register_refuses_what_is_not_a_transport() -> None:
    with pytest.raises(TypeError, match="neither a StreamTransport nor a MessageTransport"):
        transport.register_transport(object())  # type: ignore[arg-type]


def test_only_the_fast_path_touches_raw_descriptors() -> None:
    for path in PACKAGE.rglob("*.py"):
        if path.name == "fastpath.py":
            continue
        source = path.read_text()
        assert "os.dup(" not in source and "notify_closing" not in source, path


def test_the_switch_is_read_from_the_environment() -> None:
    import subprocess
    import sys

    check = "from trizmq.nursery import fastpath; print(fastpath.ENABLED)"
    for value, expected in (("0", "False"), ("off", "False"), ("1", "True")):
        done = subprocess.run(
            [sys.executable, "-c", check],
            env={"TRIZMQ_FASTPATH": value, "PATH": ""},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert done.stdout.strip() == expected


# -- the layers: no import circles, and no import running back up ------------------------
#
# Every import counts: at module level, under ``if TYPE_CHECKING:`` and inside
# functions. Print the drawing with ``python -m tests.test_architecture``.

#: the layers, top to bottom. A layer is one group, or several side by side; a group is
#: modules by name (``pkg.*``: the package and everything in it). An import may point
#: down to any lower layer, or sideways inside its own group, without circling; never
#: up, and never across to another group of its own layer.
LAYERS: list[tuple[str, list[tuple[str, list[str]]]]] = [
    (
        "clients: use trizmq as an application would (the trizmq package included)",
        [
            (
                "clients",
                [
                    "trizmq.__main__",
                    "trizmq.cli.*",
                    "trizmq.metrics.*",
                    "trizmq.spark.*",
                    "trizmq.testing.*",
                ],
            )
        ],
    ),
    (
        "the public API",
        [
            (
                "api",
                [
                    "trizmq",
                    "trizmq._socket",
                    "trizmq._lifecycle",
                    "trizmq._sockets",
                    "trizmq._merge",
                    "trizmq._proxy",
                ],
            )
        ],
    ),
    ("the actor runtime: the only place tasks start", [("nursery", ["trizmq.nursery.*"])]),
    (
        "routing as plain logic, and the transports, side by side",
        [("patterns", ["trizmq.patterns.*"]), ("transport", ["trizmq.transport.*"])],
    ),
    (
        "the foundation: what a socket is configured with and reports",
        [
            (
                "foundation",
                [
                    "trizmq._options",
                    "trizmq._endpoint",
                    "trizmq._security",
                    "trizmq._zap",
                    "trizmq.auth",
                    "trizmq._message",
                    "trizmq._monitor",
                    "trizmq._stats",
                    "trizmq._open_sockets",
                ],
            )
        ],
    ),
    ("ZMTP with no I/O", [("zmtp", ["trizmq.zmtp.*"])]),
    ("the errors every layer raises", [("errors", ["trizmq._errors"])]),
]


def module_files() -> dict[str, tuple[Path, bool]]:
    """Every module of trizmq: its dotted name -> (its file, whether it is a package)."""
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        modules[".".join(parts)] = (path, is_package)
    return modules


def import_graph() -> dict[str, dict[str, int]]:
    """module -> {module it imports: the line of the first such import}.

    Relative imports are resolved, and ``from pkg import sub`` names the submodule
    ``pkg.sub`` when there is one (the package itself otherwise).
    """
    modules = module_files()

    def known(name: str) -> str:
        while name not in modules:
            name = name.rpartition(".")[0]
        return name

    graph: dict[str, dict[str, int]] = {}
    for name, (path, is_package) in modules.items():
        package = name if is_package else name.rpartition(".")[0]
        imports: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*parts, node.module] if node.module else parts)
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.append(sub if sub in modules else source)
            for target in targets:
                if target == "trizmq" or target.startswith("trizmq."):
                    target = known(target)
                    if target != name:
                        imports.setdefault(target, node.lineno)
        graph[name] = imports
    return graph


def place(module: str) -> tuple[int, str] | None:
    """(layer index, group) of ``module`` in :data:`LAYERS`, or None."""
    for index, (_, groups) in enumerate(LAYERS):
        for group, names in groups:
            for pattern in names:
                if module == pattern.removesuffix(".*") or (
                    pattern.endswith(".*") and module.startswith(pattern[:-1])
                ):
                    return index, group
    return None


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module, each sorted."""
    reach: dict[str, set[str]] = {}
    for start in graph:
        seen: set[str] = set()
        stack = [start]
        while stack:
            for target in graph[stack.pop()]:
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        reach[start] = seen
    found = {
        tuple(sorted({m} | {o for o in reach[m] if m in reach[o]})) for m in graph if m in reach[m]
    }
    return sorted(list(component) for component in found)


def describe_circle(graph: dict[str, dict[str, int]], component: list[str]) -> str:
    inside = set(component)
    lines = [f"a circle of {len(component)} modules:"]
    for module in component:
        for target, line in sorted(graph[module].items()):
            if target in inside:
                lines.append(f"    {module} (line {line}) -> {target}")
    return "\n".join(lines)


def upward_imports(graph: dict[str, dict[str, int]]) -> dict[tuple[str, str], str]:
    """Every import that points up a layer, or across to another group of its layer:
    (module, imported module) -> where and why."""
    wrong = {}
    for module, imports in sorted(graph.items()):
        here = place(module)
        for target, line in sorted(imports.items()):
            there = place(target)
            if here is None or there is None:
                continue  # test_every_module_has_a_layer says so
            if there[0] < here[0]:
                wrong[module, target] = f"line {line}: up to {LAYERS[there[0]][0]!r}"
            elif there[0] == here[0] and there[1] != here[1]:
                wrong[module, target] = f"line {line}: across, {here[1]} to {there[1]}"
    return wrong


def drawing() -> str:
    """The layers, each module with what it imports (``^`` marks an import that runs
    up or across), then the circles and the count of wrong imports."""
    graph = import_graph()
    wrong = upward_imports(graph)
    lines = []
    for index, (title, groups) in enumerate(LAYERS):
        lines.append(f"{index + 1}. {title}")
        for group, _ in groups:
            if len(groups) > 1:
                lines.append(f"   [{group}]")
            for module in sorted(m for m in graph if place(m) == (index, group)):
                targets = [t + " ^" * ((module, t) in wrong) for t in sorted(graph[module])]
                lines.append(f"     {module} -> {', '.join(targets) or '(nothing of trizmq)'}")
    found = circles(graph)
    lines += [describe_circle(graph, component) for component in found]
    lines.append(f"circles: {len(found)}; imports up or across: {len(wrong)}")
    return "\n".join(lines)


def test_every_module_has_a_layer() -> None:
    unplaced = [module for module in import_graph() if place(module) is None]
    assert not unplaced, f"modules LAYERS does not place: {unplaced}"


def test_no_import_circles() -> None:
    graph = import_graph()
    found = circles(graph)
    assert not found, "\n".join(describe_circle(graph, component) for component in found)


def test_imports_point_down_the_layers() -> None:
    wrong = upward_imports(import_graph())
    assert not wrong, "imports running back up the layers:\n" + "\n".join(
        f"{module} -> {target} ({why})" for (module, target), why in wrong.items()
    )


def test_the_checks_see_a_circle_an_import_up_and_one_across() -> None:
    graph = {
        "trizmq.zmtp.frames": {"trizmq._options": 3},
        "trizmq._options": {"trizmq.zmtp.frames": 5},
        "trizmq.patterns.routing": {"trizmq.transport.tcp": 7},
        "trizmq.transport.tcp": {},
    }
    assert circles(graph) == [["trizmq._options", "trizmq.zmtp.frames"]]
    assert set(upward_imports(graph)) == {
        ("trizmq.zmtp.frames", "trizmq._options"),
        ("trizmq.patterns.routing", "trizmq.transport.tcp"),
    }


if __name__ == "__main__":
    print(drawing())
