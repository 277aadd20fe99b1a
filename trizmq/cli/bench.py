"""``trizmq bench``: run the benchmark suite (the ``benchmarks`` package of a checkout).

Every argument is passed to the suite's ``run(argv)`` (``benchmarks/run.py``),
which prints its progress and its tables itself (``trizmq bench --quick``,
``--only pushpull``, ``--json PATH``; ``trizmq bench -- --help`` lists them).
On a terminal a progress bar runs below the suite's progress lines. ``benchmarks`` is not
installed with trizmq: it is imported from the current directory when it is not
importable already, so run this from a source checkout.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
from collections.abc import Callable, Iterator
from typing import Protocol, cast

import click
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ._common import CliError

__all__ = ["bench", "load_suite"]


class Suite(Protocol):
    """The benchmark suite's entry point: ``run(argv, progress=...)``, an exit status."""

    def __call__(
        self, argv: list[str], /, progress: Callable[[int, int], None] | None = None
    ) -> object: ...


def _import(name: str) -> types.ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def load_suite() -> Suite:
    """The suite's ``run(argv)``; a :class:`CliError` when there is no benchmark suite.

    Accepts both spellings: ``benchmarks.run(argv)`` (a function) and
    ``benchmarks.run.run(argv)`` (a function in a module).
    """
    if _import("benchmarks") is None and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # a source checkout: benchmarks/ is not installed
    package = _import("benchmarks")
    suite = getattr(package, "run", None)
    if suite is None or isinstance(suite, types.ModuleType):
        suite = getattr(_import("benchmarks.run"), "run", None)
    if not callable(suite):
        raise CliError(
            "the benchmark suite is not available: no `benchmarks` package with run(argv) "
            "(run `trizmq bench` from a trizmq source checkout)"
        )
    return cast(Suite, suite)


@contextlib.contextmanager
def _progress_bar() -> Iterator[Callable[[int, int], None] | None]:
    """A rich progress bar on a terminal (the suite's lines keep going to stderr)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    with Progress(
        TextColumn("benchmarks"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as bar:
        task = bar.add_task("benchmarks", total=None)

        def advance(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield advance


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> int:
    """Run the benchmark suite; ARGS go to it (see `trizmq bench -- --help`).

    \b
    Examples:
      trizmq bench --quick
      trizmq bench --only pushpull --json results.json
    """
    suite = load_suite()
    argv = list(args)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    with _progress_bar() as advance:
        code = suite(argv, progress=advance)
    return code if isinstance(code, int) else 0
