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
