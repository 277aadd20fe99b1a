"""The trio probe: the one module that reads trio's private fields.

The rule it bends: trizmq uses trio through its public API. Here, and nowhere else
(``tests/test_architecture.py`` walks the package to keep it so), it reads what
trio keeps private, each read probed before use and each with a public fallback:

* the cancellation test of ``trio.lowlevel.checkpoint_if_cancelled`` made without
  creating a coroutine (``task._cancel_status``, ``task._runner``, and the count in
  ``task._cancel_points``), reading the running task from trio's thread-local run
  context (``trio._core._run.GLOBAL_RUN_CONTEXT``): :func:`cancel_pending` hands the
  socket a prebuilt check, which its hot paths call in their source and restate
  nothing of, and :func:`inline_the_check` gives ``hot_paths`` the check's body to
  compile into them in place of the call (a call costs ~10 % of an inproc message);
* whether the run loop has a task to run (:func:`anything_runnable`, its run queue);
* the stdlib socket under a trio socket (:func:`stdlib_socket`);
* the ``ssl.SSLObject`` and outgoing ``MemoryBIO`` of an ``SSLStream``
  (:func:`tls_insides`).

The portable path (``TRIZMQ_FASTPATH=0``, or a trio whose fields moved) awaits
``checkpoint_if_cancelled`` instead: ``tests/test_cancel_check.py`` runs every case
with both checks, down to trio's count of cancel points.
"""

from __future__ import annotations

import ast
import copy
import socket
import ssl
from collections.abc import Callable
from typing import Any

import trio

from .. import fastpath

__all__ = [
    "RUN_CONTEXT",
    "anything_runnable",
    "cancel_pending",
    "inline_the_check",
    "run_vars",
    "stdlib_socket",
    "tls_insides",
]

_current_task = trio.lowlevel.current_task


class _CurrentTask:
    """``.task`` as trio's public ``current_task()`` (where trio's own context moved)."""

    @property
    def task(self) -> trio.lowlevel.Task:
        return _current_task()


#: ``RUN_CONTEXT.task`` is the running task; the inlined check reads it (valid only
#: where :func:`cancel_pending` returned the inlined check)
RUN_CONTEXT: Any
try:
    # trio's thread-local run context: ``.task`` is what current_task() returns, read
    # without the function call (the probe checks that it is so)
    from trio._core._run import GLOBAL_RUN_CONTEXT as RUN_CONTEXT
except ImportError:  # pragma: no cover - a trio that moved it: the probe fails
    RUN_CONTEXT = _CurrentTask()


# -- the inlined cancellation check -------------------------------------------------------
def _cancel_pending_inline() -> bool:
    task = RUN_CONTEXT.task
    if task._cancel_status.effectively_cancelled or (
        task._runner.ki_pending and task is task._runner.main_task
    ):
        return True
    task._cancel_points += 1
    return False


def _cancel_pending_in(values: dict[str, Any]) -> Callable[[], bool]:
    """The inlined check, reading the running task from ``values`` (this thread's run
    context, see :func:`run_vars`): one dict subscript instead of a thread-local
    lookup."""

    def cancel_pending() -> bool:
        task = values["task"]
        if task._cancel_status.effectively_cancelled or (
            task._runner.ki_pending and task is task._runner.main_task
        ):
            return True
        task._cancel_points += 1
        return False

    return cancel_pending


#: the check as the hot paths run it, compiled into them by ``fastpath.hot_paths``
#: in place of ``if self._cancel_pending(): ...`` (the ``pass`` stands for that body)
_INLINE_CHECK = """
running_task = self._run_vars["task"]
if running_task._cancel_status.effectively_cancelled or (
    running_task._runner.ki_pending and running_task is running_task._runner.main_task
):
    pass
running_task._cancel_points += 1
"""
_INLINE_STATEMENTS = ast.parse(_INLINE_CHECK).body


def _is_the_check(test: ast.expr) -> bool:
    """Whether ``test`` is ``self._cancel_pending()``."""
    return (
        isinstance(test, ast.Call)
        and not test.args
        and not test.keywords
        and isinstance(test.func, ast.Attribute)
        and test.func.attr == "_cancel_pending"
        and isinstance(test.func.value, ast.Name)
        and test.func.value.id == "self"
    )


class _InlineTheCheck(ast.NodeTransformer):
    """``if self._cancel_pending(): body`` (no else) becomes :data:`_INLINE_CHECK`
    around ``body``, placed at the ``if``'s line."""

    def __init__(self) -> None:
        self.inlined = 0

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        self.generic_visit(node)
        if not _is_the_check(node.test) or node.orelse:
            return node
        statements = copy.deepcopy(_INLINE_STATEMENTS)
        for statement in statements:
            for part in ast.walk(statement):
                if "lineno" in part._attributes:
                    ast.copy_location(part, node)
        test = statements[1]
        assert isinstance(test, ast.If)
        test.body = node.body
        self.inlined += 1
        return statements


def inline_the_check(definition: ast.AST) -> int:
    """Compile the cancellation check into ``definition`` (a parsed method; see
    ``hot_paths``): each ``if self._cancel_pending(): body`` becomes the check's body,
    reading the running task from ``self._run_vars`` (trio's run-context values, see
    :func:`run_vars`), around ``body``. How many it rewrote. What a call costs
    (~35 ns here, a few percent of an inproc message's sending and receiving) is
    saved, and the socket's modules restate nothing of trio."""
    inliner = _InlineTheCheck()
    inliner.visit(definition)
    return inliner.inlined


def _probe_cancel_check() -> bool:
    """Whether this trio has the fields ``checkpoint_if_cancelled`` reads and counts."""
    try:
        task = _current_task()
        runner = task._runner
        return (
            RUN_CONTEXT.task is task
            and isinstance(task._cancel_status.effectively_cancelled, bool)
            and isinstance(runner.ki_pending, bool)
            and runner.main_task is not None
            and isinstance(task._cancel_points, int)
        )
    except AttributeError:
        return False


_PROBED: bool | None = None


def cancel_pending() -> Callable[[], bool] | None:
    """The inlined check, or None where the caller must await
    ``trio.lowlevel.checkpoint_if_cancelled()`` (fast path off, or a trio whose
    internals moved). The check returns True when the caller must await a
    checkpoint (it is cancelled), and otherwise counts a cancel point as trio does.
    Call it from inside a ``trio.run``; the check it returns serves that run.
    """
    global _PROBED
    if not fastpath.ENABLED:
        return None
    if _PROBED is None:
        _PROBED = _probe_cancel_check()
    if not _PROBED:
        return None
    values = run_vars()
    return _cancel_pending_inline if values is None else _cancel_pending_in(values)


def run_vars() -> dict[str, Any] | None:
    """This thread's values of trio's run context: ``run_vars()["task"]`` is the running
    task, one dict subscript where ``RUN_CONTEXT.task`` is a thread-local lookup
    (~40 ns less on every send and receive). None where trio keeps it otherwise.
    Call it from inside a ``trio.run``; the dict is this thread's, so it serves the
    sockets of this run (a socket lives within one).
    """
    values = getattr(RUN_CONTEXT, "__dict__", None)
    if isinstance(values, dict) and values.get("task") is _current_task():
        return values
    return None


# -- the run loop ---------------------------------------------------------------------------
def anything_runnable() -> bool:
    """Whether trio's run loop has a task to run (from its internals; True where they
    moved, so that the loop is woken as if one were). A write that went out whole,
    held batches released with nothing left for a writer, woke nobody: the loop may
    sleep until the answers come, without a wake-up of its own first."""
    try:
        return bool(RUN_CONTEXT.runner.runq)
    except AttributeError:  # pragma: no cover - a trio that moved it
        return True


# -- sockets and TLS ------------------------------------------------------------------------
def stdlib_socket(tsock: trio.socket.SocketType) -> socket.socket | None:
    """The stdlib socket a trio socket makes its calls on, when it is on the same
    descriptor; None where trio keeps it otherwise."""
    inner = getattr(tsock, "_sock", None)
    if isinstance(inner, socket.socket) and inner.fileno() == tsock.fileno():
        return inner
    return None


def tls_insides(stream: trio.SSLStream[Any]) -> tuple[ssl.SSLObject, ssl.MemoryBIO] | None:
    """An ``SSLStream``'s ``ssl.SSLObject`` and outgoing ``MemoryBIO``, when they are
    where this trio keeps them; None otherwise (read afresh at every call)."""
    ssl_object = getattr(stream, "_ssl_object", None)
    outgoing = getattr(stream, "_outgoing", None)
    if not isinstance(ssl_object, ssl.SSLObject) or not isinstance(outgoing, ssl.MemoryBIO):
        return None
    return ssl_object, outgoing
