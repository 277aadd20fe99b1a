"""Every ```python block of docs/*.md runs, so the examples cannot rot.

Each block runs in its own Python process, in a fresh temporary directory, with a
timeout, and must exit 0 without writing a traceback:

- a **program** (it calls ``trio.run(...)`` itself) runs as a script;
- a **test** (it defines ``test_*`` functions) runs under pytest, with trio mode and
  trizmq's pytest plugin, as a user's test file would;
- a **fragment** (anything else) runs with ``trio`` and ``trizmq`` imported, inside
  ``trio.run``, top-level ``await``/``async with``/``async for`` allowed, and with
  ``stack`` (a ``contextlib.AsyncExitStack``) and ``nursery`` (a trio nursery,
  cancelled when the fragment ends) in scope.

An HTML comment right before a block (invisible on the rendered page) adjusts this:

- ``<!-- docs-test: setup ... -->``: the code up to ``-->`` runs before a fragment, in
  the same namespace, to give it what the page assumes (a socket, a peer). Prefer
  this to skipping.
- ``<!-- docs-test: sigint N -->``: a program that serves until interrupted gets
  SIGINT after N seconds and must then exit 0.
- ``<!-- docs-test: skip REASON -->``: not run (it is still compiled). Only for a
  fragment that cannot run even with a setup.
"""

from __future__ import annotations

import ast
import json
import re
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
TIMEOUT = 60.0

FENCE = re.compile(r"^(?P<indent>[ \t]*)```python[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
                   re.M | re.S)
MARKER = re.compile(
    r"<!--\s*docs-test:\s*(?P<kind>skip|setup|sigint)\b(?P<arg>(?:(?!-->).)*)-->\s*\Z", re.S
)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    code: str
    marker: str | None  # "skip", "setup", "sigint" or None
    arg: str  # the marker's argument: a reason, setup code, or seconds

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _dedent(body: str, indent: str) -> str:
    return "".join(line[len(indent):] if line.startswith(indent) else line
                   for line in body.splitlines(keepends=True))


def collect_blocks() -> list[Block]:
    blocks = []
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            marker = MARKER.search(text, 0, m.start())
            line = text.count("\n", 0, m.start()) + 1
            code = _dedent(m.group("body"), m.group("indent"))
            if marker is None:
                blocks.append(Block(page.name, line, code, None, ""))
            else:
                arg = marker.group("arg")
                arg = arg.strip() if marker.group("kind") != "setup" else _dedent_setup(arg)
                blocks.append(Block(page.name, line, code, marker.group("kind"), arg))
    return blocks


def _dedent_setup(arg: str) -> str:
    return textwrap.dedent(arg.lstrip("\n")).rstrip() + "\n"


def _kind(code: str) -> str:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(code, "<block>", "exec", flags=flags)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
            node.name.startswith("test_")
        ):
            return "test"
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "trio"
        ):
            return "program"
    return "fragment"


# Runs a fragment: its setup, then its code, in one namespace inside trio.run.
HARNESS = """\
import ast, contextlib, inspect, json, pathlib, sys
import trio, trizmq

spec = json.loads(pathlib.Path(sys.argv[1]).read_text(encoding="utf-8"))

async def main():
    async with trio.open_nursery() as nursery:
        async with contextlib.AsyncExitStack() as stack:  # closed first, normally
            ns = {"__name__": "__main__", "trio": trio, "trizmq": trizmq,
                  "stack": stack, "nursery": nursery}
            for filename, source in spec:
                code = compile(source, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
                result = eval(code, ns)
                if inspect.iscoroutine(result):
                    await result
        nursery.cancel_scope.cancel()  # then whatever the setup left running

trio.run(main)
"""

BLOCKS = collect_blocks()


def _run(cmd: list[str], cwd: Path, sigint_after: float | None = None) -> tuple[int, str]:
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        if sigint_after is not None:
            try:
                proc.wait(timeout=sigint_after)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"timed out after {TIMEOUT:.0f} s:\n{out}")
    return proc.returncode, out


def test_the_pages_have_examples() -> None:
    assert len(BLOCKS) >= 10, "the python blocks of docs/*.md were not found"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_docs_example_runs(block: Block, tmp_path: Path) -> None:
    # every block, skipped or not, must at least be valid Python
    compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if block.marker == "skip":
        pytest.skip(f"{block.id} is marked docs-test: skip: {block.arg or 'no reason given'}")
    kind = _kind(block.code)
    name = re.sub(r"\W", "_", block.id)
    python = [sys.executable, "-X", "dev", "-W", "error"]
    sigint = None
    if kind == "test":
        script = tmp_path / f"test_{name}.py"
        script.write_text(block.code, encoding="utf-8")
        cmd = [*python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "trio_mode=true",
               "-W", "error", script.name]
    elif kind == "program":
        if block.marker == "setup":
            pytest.fail(f"{block.id}: a setup comment applies to fragments only")
        script = tmp_path / f"{name}.py"
        script.write_text(block.code, encoding="utf-8")
        cmd = [*python, script.name]
        if block.marker == "sigint":
            sigint = float(block.arg or "2")
    else:
        parts = [(f"<{block.id} setup>", block.arg)] if block.marker == "setup" else []
        parts.append((block.id, block.code))
        spec = tmp_path / "fragment.json"
        spec.write_text(json.dumps(parts), encoding="utf-8")
        harness = tmp_path / "harness.py"
        harness.write_text(HARNESS, encoding="utf-8")
        cmd = [*python, harness.name, spec.name]
    started = time.monotonic()
    returncode, out = _run(cmd, tmp_path, sigint)
    assert returncode == 0, (
        f"{block.id} ({kind}) exited {returncode} after {time.monotonic() - started:.1f} s:\n"
        f"{out}"
    )
    assert "Traceback" not in out, f"{block.id} ({kind}) printed a traceback:\n{out}"
