"""Which functions a change of structure changed, and how often a benchmark runs them.

    python -m benchmarks.samecode --compare ../before               # every function
    python -m benchmarks.samecode --compare ../before --trace inproc64 -n 20000

A change of structure (files split, code moved between modules, names of locals
changed) should leave the code the hot paths run as it was; wall-clock benchmarks on a
shared machine cannot show a 2 % difference, but the bytecode can show there is none.
This compiles every ``trizmq`` function of the two source trees (``--compare`` and
this one), matches them by qualified name (moving between modules is no change), and
compares their bytecode with line numbers and the names of locals left out (a local
renamed is no change; nested functions and comprehensions are compared too).

With ``--trace CASE`` (a case of :mod:`benchmarks.cpu`) the case runs in each tree
under ``sys.setprofile``, and each function it ran that differs (or exists in one tree
only) is listed with how many times the case called it in each tree: a function called
once per message is on the hot path, one called once per run is set-up. A function of
the same code that the case called more or less often (by over 5 % of the messages) is
listed too.
"""

from __future__ import annotations

import argparse
import collections
import dis
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import types
from typing import Any

#: modules no benchmark's message runs through (and that import optional extras)
SKIPPED = ("trizmq.spark", "trizmq.cli", "trizmq.metrics", "trizmq.testing", "trizmq.__main__")


def canonical(code: types.CodeType) -> list[Any]:
    """The bytecode of ``code`` and its nested code, without line numbers or local names."""
    locals_seen: dict[str, int] = {}
    shape: list[Any] = []
    for ins in dis.get_instructions(code):
        if ins.opcode in dis.haslocal or ins.opname in ("LOAD_CLOSURE", "MAKE_CELL"):
            # every instruction that names locals: 3.12's LOAD_FAST_AND_CLEAR (an
            # inlined comprehension's variable), 3.13's pairs (LOAD_FAST_LOAD_FAST, whose
            # argval is a tuple of two names), not only the *_FAST ones
            names = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
            arg: Any = [locals_seen.setdefault(str(name), len(locals_seen)) for name in names]
        elif isinstance(ins.argval, types.CodeType):
            arg = canonical(ins.argval)
        else:
            arg = ins.argrepr if ins.opname != "LOAD_CONST" else repr(ins.argval)
        shape.append((ins.opname, arg))
    return shape


def functions() -> dict[str, list[str]]:
    """Qualified name → the canonical bytecode (as JSON) of each function of that name."""
    import trizmq

    found: dict[str, list[str]] = collections.defaultdict(list)
    seen: set[int] = set()
    root = os.path.dirname(os.path.abspath(trizmq.__file__))

    def visit(namespace: Any, module: str) -> None:
        for value in list(vars(namespace).values()):
            if isinstance(value, types.FunctionType) and id(value.__code__) not in seen:
                seen.add(id(value.__code__))
                if not value.__code__.co_filename.startswith(root):
                    continue  # attrs' generated methods (their hash salt differs by tree)
                found[value.__qualname__].append(json.dumps(canonical(value.__code__)))
            elif (
                isinstance(value, type)
                and value.__module__ == module
                and value.__qualname__.startswith(getattr(namespace, "__qualname__", ""))
            ):
                visit(value, module)

    for info in pkgutil.walk_packages(trizmq.__path__, "trizmq."):
        if not info.name.startswith(SKIPPED):
            module = importlib.import_module(info.name)
            visit(module, module.__name__)
    return {name: sorted(shapes) for name, shapes in found.items()}


def traced(case: str, n: int) -> dict[str, int]:
    """How many times each function (by qualified name) ran in ``case`` of benchmarks.cpu."""
    from benchmarks.cpu import measure

    calls: collections.Counter[str] = collections.Counter()

    def profile(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call" and "trizmq" in frame.f_code.co_filename:
            code = frame.f_code  # co_qualname from Python 3.11 on
            calls[getattr(code, "co_qualname", code.co_name)] += 1

    sys.setprofile(profile)
    try:
        measure(case, n)
    finally:
        sys.setprofile(None)
    return dict(calls)


def report_in(tree: str, trace: str | None, n: int) -> dict[str, Any]:
    """Run this module in a fresh process with ``tree`` first on ``sys.path``."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    argv = [sys.executable, "-m", "benchmarks.samecode", "--tree", tree, "-n", str(n)]
    if trace:
        argv += ["--trace", trace]
    done = subprocess.run(argv, capture_output=True, text=True, cwd=here, timeout=900)
    if done.returncode:
        raise SystemExit(f"samecode in {tree} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", metavar="TREE", help="the source tree before the change")
    parser.add_argument("--trace", metavar="CASE", help="a benchmarks.cpu case to count calls in")
    parser.add_argument("-n", type=int, default=10_000, help="messages the traced case sends")
    parser.add_argument("--tree", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tree:
        sys.path.insert(0, os.path.abspath(args.tree))
        import trizmq

        assert trizmq.__file__.startswith(os.path.abspath(args.tree)), trizmq.__file__
        calls = traced(args.trace, args.n) if args.trace else {}
        print(json.dumps({"functions": functions(), "calls": calls}))
        return 0
    if not args.compare:
        parser.error("--compare TREE is required")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    before = report_in(args.compare, args.trace, args.n)
    after = report_in(here, args.trace, args.n)
    old, new = before["functions"], after["functions"]
    calls_before, calls_after = before["calls"], after["calls"]
    changed = [name for name in old.keys() & new.keys() if old[name] != new[name]]
    rows = [(name, "changed") for name in changed]
    rows += [(name, "before only") for name in old.keys() - new.keys()]
    rows += [(name, "after only") for name in new.keys() - old.keys()]
    same = len(old.keys() & new.keys()) - len(changed)
    if not args.trace:
        print(f"{same} functions the same, {len(rows)} listed")
        print("| function | what |")
        print("|---|---|")
        for name, what in sorted(rows):
            print(f"| {name} | {what} |")
        return 0
    ran = calls_before.keys() | calls_after.keys()
    rows = [row for row in rows if row[0] in ran]
    listed = {name for name, _ in rows}
    for name in ran - listed:  # the same code, called more or less often
        if abs(calls_after.get(name, 0) - calls_before.get(name, 0)) > args.n // 20:
            rows.append((name, "same code, called more or less often"))
    print(
        f"{args.trace}, {args.n} messages: {sum(calls_before.values()):,} calls of "
        f"{len(calls_before)} trizmq functions before, {sum(calls_after.values()):,} of "
        f"{len(calls_after)} after; {same} functions the same in both trees"
    )
    print("| function | what | calls before | calls after |")
    print("|---|---|---:|---:|")
    for name, what in sorted(rows, key=lambda row: (-calls_after.get(row[0], 0), row[0])):
        print(f"| {name} | {what} | {calls_before.get(name, 0):,} | {calls_after.get(name, 0):,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
