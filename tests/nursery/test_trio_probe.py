"""The trio probe's inlining of the cancellation check (``inline_cancel_checks``).

The socket's hot paths test ``self._cancel_pending()``; the probe compiles the
check's body into them in place of the call. The behaviour of both forms is
``tests/test_cancel_check.py``'s; these tests check the rewriting itself: what it
rewrites, that tracebacks still point at the socket's own lines, and what it leaves
alone.
"""

from __future__ import annotations
import __future__

import inspect
import sys
from typing import Any

import pytest

from trizmq._socket import Socket
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath.trio_probe import inline_cancel_checks

HOT = ("send", "send_multipart", "_send_raw", "recv", "recv_multipart", "_recv_raw")


@pytest.mark.fastpath
@pytest.mark.parametrize("name", HOT)
def test_the_hot_paths_run_the_check_inline(name: str) -> None:
    method = getattr(Socket, name)
    code = method.__code__
    assert "_cancel_points" in code.co_names, "the check was not compiled in"
    source, first = inspect.getsourcelines(method)
    assert code.co_firstlineno == first
    assert "self._cancel_pending()" in "".join(source)  # the source keeps the call
    assert method.__qualname__ == f"Socket.{name}"
    # what a profiler or a traceback names (the code's own, on Python 3.11+)
    assert getattr(code, "co_qualname", f"Socket.{name}") == f"Socket.{name}"
    assert method.__module__ == "trizmq._socket"
    # the docstring as this interpreter compiles it from the class as written (3.13
    # strips a docstring's indentation when it compiles it; 3.12 and older keep it)
    assert method.__doc__ == docstring_as_compiled(method, "".join(source))


def docstring_as_compiled(method: Any, source: str) -> str | None:
    """The ``__doc__`` of ``method``'s source compiled inside a class, as its own was."""
    flags = __future__.annotations.compiler_flag
    code = compile("class Written:\n" + source, "<source>", "exec", flags=flags, dont_inherit=True)
    namespace: dict[str, Any] = {}
    exec(code, dict(vars(sys.modules[method.__module__])), namespace)
    doc: str | None = vars(namespace["Written"])[method.__name__].__doc__
    return doc


class _Sample:
    _cancel_pending: Any = None
    _run_vars: dict[str, Any] = {}  # noqa: RUF012

    async def checks(self) -> int:
        if self._cancel_pending():
            return 1
        return 0


def test_a_method_is_rewritten_only_where_it_may_be(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", True)

    def decorated(fn: Any) -> Any:
        return fn

    class Kept:
        _cancel_pending: Any = None

        @decorated
        async def a_decorated_one(self) -> None:
            if self._cancel_pending():
                return

        async def with_a_closure(self) -> None:
            if self._cancel_pending():
                decorated(None)

        async def with_the_name(self) -> None:
            running_task = 1
            if self._cancel_pending():
                return
            del running_task

    before = dict(vars(Kept))
    inline_cancel_checks(Kept)
    for name in ("a_decorated_one", "with_a_closure", "with_the_name"):
        assert vars(Kept)[name] is before[name], name
    namespace: dict[str, Any] = {}
    exec(  # a class without a source file keeps its calls
        "class NoSource:\n    async def f(self):\n        if self._cancel_pending():\n"
        "            return 1\n",
        namespace,
    )
    method = namespace["NoSource"].f
    assert inline_cancel_checks(namespace["NoSource"]).f is method
    sample = inline_cancel_checks(type("Sample", (_Sample,), {}))
    assert "checks" not in vars(sample)  # inherited methods are the base's business
    rewritten = inline_cancel_checks(_Sample).checks
    assert "_cancel_points" in rewritten.__code__.co_names


def test_the_switch_off_leaves_the_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", False)

    class Off:
        _cancel_pending: Any = None

        async def checks(self) -> None:
            if self._cancel_pending():
                return

    method = Off.checks
    assert inline_cancel_checks(Off).checks is method
