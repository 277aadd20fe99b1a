"""The house rules that keep the layers apart, checked on the source.

* Transports plug in through one table (``trizmq.transport``): the runtime, the
  routing layer and the socket classes never name a scheme, and never ask a peer
  which kind of transport it came through.
* The fast path is one package with one switch (``trizmq.nursery.fastpath``):
  nothing else touches raw descriptors, and one module of it
  (``trizmq.nursery.fastpath.trio_probe``) alone reads trio's private fields.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import trizmq
from trizmq import transport
from trizmq.transport import MessageTransport, StreamTransport

PACKAGE = Path(trizmq.__file__).parent
#: the layers that must not know which transports exist
AGNOSTIC = [
    *sorted((PACKAGE / "nursery").glob("*.py")),
    *sorted((PACKAGE / "nursery" / "fastpath").glob("*.py")),
    *sorted((PACKAGE / "patterns").rglob("*.py")),
    PACKAGE / "_socket.py",
    PACKAGE / "_lifecycle.py",
    PACKAGE / "_socket_classes.py",
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
    fast_path = PACKAGE / "nursery" / "fastpath"
    for path in PACKAGE.rglob("*.py"):
        if path.is_relative_to(fast_path):
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
                    "trizmq._sending",
                    "trizmq._receiving",
                    "trizmq._endpoints",
                    "trizmq._lifecycle",
                    "trizmq._socket_classes",
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
    (
        "what every layer uses: the errors it raises, the docstring parts it shares",
        [("errors", ["trizmq._errors"]), ("docparts", ["trizmq._docparts"])],
    ),
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


#: the one module that may read trio's private fields
TRIO_PROBE = PACKAGE / "nursery" / "fastpath" / "trio_probe.py"


def _trio_private_names() -> set[str]:
    """The underscore names of the trio objects trizmq could reach into: a task, its
    runner and cancel status, trio's run context, a trio socket, a SocketStream and
    an SSLStream (dunders aside)."""
    import socket
    import ssl

    import trio
    import trio.testing

    objects: list[object] = []

    async def inside() -> None:
        task = trio.lowlevel.current_task()
        objects.extend([task, task._runner, task._cancel_status])
        objects.append(trio._core._run.GLOBAL_RUN_CONTEXT)

    trio.run(inside)
    left, right = socket.socketpair()
    with left, right:
        tsock = trio.socket.from_stdlib_socket(left)
        objects += [tsock, trio.SocketStream(tsock)]
        memory, _ = trio.testing.memory_stream_pair()
        objects.append(trio.SSLStream(memory, ssl.create_default_context(), server_hostname="x"))
    names = set()
    for obj in objects:
        for name in (*dir(obj), *getattr(obj, "__dict__", {})):
            if name.startswith("_") and not name.startswith("__"):
                names.add(name)
    return names


#: trio's fields trizmq has read: looked for whether or not trizmq's own objects
#: have fields of the same names
TRIO_FIELDS_READ = {
    "_cancel_status",
    "_runner",
    "_cancel_points",
    "_ssl_object",
    "_outgoing",
    "_sock",
}


def _own_names() -> set[str]:
    """The underscore names trizmq gives its own objects (``self._x = ...``,
    ``__slots__``, methods): a trio field of the same name (a ``CancelStatus``'s
    ``_tasks`` and ``Waiters._tasks``, say) is not looked for, unless trizmq is known
    to have read it (:data:`TRIO_FIELDS_READ`)."""
    own: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    own.add(node.attr)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                own.add(node.name)
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value.startswith("_")
                and node.value.isidentifier()
            ):
                own.add(node.value)  # a __slots__ entry, most likely
    return own


def trio_private_reads(path: Path, names: set[str]) -> list[tuple[int, str]]:
    """Where a module reaches into trio: an import of a private trio module, ``trio._x``,
    or one of trio's underscore ``names`` read off anything but ``self``/``cls``
    (attribute or ``getattr``-style string)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            modules = []
        for module in modules:
            parts = module.split(".")
            if parts[0] == "trio" and any(part.startswith("_") for part in parts[1:]):
                found.append((node.lineno, f"import {module}"))
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id == "trio":
                found.append((node.lineno, f"trio.{node.attr}"))
            elif node.attr in names and not (
                isinstance(owner, ast.Name) and owner.id in ("self", "cls")
            ):
                found.append((node.lineno, f".{node.attr}"))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr", "delattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in names
        ):
            found.append((node.lineno, f"{node.func.id}(..., {node.args[1].value!r})"))
    return found


def test_trio_private_fields_are_read_in_the_probe_only() -> None:
    """trio's underscore fields (a task's ``_cancel_status``, ``_runner`` and
    ``_cancel_points``, ``trio._core``'s run context, an SSLStream's ``_ssl_object``
    and ``_outgoing``, a trio socket's ``_sock``, ...) are read in one module: the
    fast path's trio probe. A trio that moves them then breaks one file, whose every
    read is probed and has a public fallback."""
    trio_names = _trio_private_names()
    assert trio_names >= TRIO_FIELDS_READ
    names = (trio_names - _own_names()) | TRIO_FIELDS_READ
    readers = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        reads = trio_private_reads(path, names)
        if reads:
            readers[path.relative_to(PACKAGE).as_posix()] = reads
    probe = TRIO_PROBE.relative_to(PACKAGE).as_posix()
    assert readers.get(probe), "the probe reads nothing: is the check still looking?"
    assert set(readers) == {probe}, {k: v for k, v in readers.items() if k != probe}


def test_the_fast_path_is_one_module_a_job() -> None:
    """The fast path's files stay small enough to read whole, each saying in its
    docstring which rule it bends and which test shows the portable path the same."""
    package = PACKAGE / "nursery" / "fastpath"
    for path in sorted(package.glob("*.py")):
        source = path.read_text()
        assert len(source.splitlines()) <= 400, path.name
        docstring = ast.get_docstring(ast.parse(source))
        assert docstring, path.name
        if path.name != "__init__.py":
            assert "TRIZMQ_FASTPATH=0" in docstring and "tests/" in docstring, path.name


# -- sizes: what one reader can hold in mind --------------------------------------------
#: the most ``Any`` may appear in trizmq (as a word, imports included); where a value
#: is only passed through, ``object`` says so, and an untyped library gets a Protocol
MAX_ANY = 60
#: the longest a function may be (``def`` to its last line, docstring included)
MAX_FUNCTION_LINES = 100
#: the most lines of code a class may have (its and its methods' docstrings aside)
MAX_CLASS_CODE_LINES = 600


def _docstring_lines(node: ast.AST) -> int:
    """How many lines the docstring of ``node`` (a class or function) takes."""
    body = getattr(node, "body", None)
    first = body[0] if body else None
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        return (first.end_lineno or first.lineno) - first.lineno + 1
    return 0


def _defined(kinds: tuple[type[ast.stmt], ...]) -> list[tuple[str, ast.stmt]]:
    """Every definition of these kinds in trizmq, with where it starts."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, kinds):
                found.append((f"{path.relative_to(PACKAGE)}:{node.lineno}", node))
    return found


def _lines(node: ast.stmt) -> int:
    return (node.end_lineno or node.lineno) - node.lineno + 1


def test_any_is_rare() -> None:
    count = sum(len(re.findall(r"\bAny\b", path.read_text())) for path in PACKAGE.rglob("*.py"))
    assert count <= MAX_ANY


def test_no_function_is_longer_than_a_screenful_or_two() -> None:
    long = {
        where: _lines(node)
        for where, node in _defined((ast.FunctionDef, ast.AsyncFunctionDef))
        if _lines(node) > MAX_FUNCTION_LINES
    }
    assert not long


def test_no_class_is_too_big_to_read() -> None:
    big = {}
    for where, node in _defined((ast.ClassDef,)):
        methods = [
            n for n in ast.walk(node) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        code = _lines(node) - _docstring_lines(node) - sum(map(_docstring_lines, methods))
        if code > MAX_CLASS_CODE_LINES:
            big[where] = code
    assert not big


if __name__ == "__main__":
    print(drawing())
