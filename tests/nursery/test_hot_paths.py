"""The generated hot paths (``trizmq.nursery.fastpath.hot_paths``): a socket's four
hottest awaiting operations, compiled on the fast path with their cores and the trio
probe's cancellation test inlined, from their own source.

The behaviour of both forms is the suite's: it runs with the fast path on (generated)
and off (the plain methods); ``tests/test_cancel_check.py`` runs every case with both
cancellation checks. These tests hold the generated code to its source: every listed
operation is generated, each core's statements stand in it as written, tracebacks
point at the source's own lines, no socket class overrides a core, and a shape the
generator cannot take is refused loudly rather than left slow without a word.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import pytest

import trizmq
from trizmq._receiving import Receiving
from trizmq._sending import Sending
from trizmq.nursery import fastpath
from trizmq.nursery.fastpath.hot_paths import HotPathError, generated_source, hot_paths

HOT = [
    (Sending, "send"),
    (Sending, "send_multipart"),
    (Receiving, "recv"),
    (Receiving, "recv_multipart"),
]


def _statements(function: Any) -> list[str]:
    """A function's statements as source, one each (its docstring left out)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    (definition,) = tree.body
    body = definition.body  # type: ignore[attr-defined]
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return [ast.unparse(node) for node in body]


@pytest.mark.fastpath
@pytest.mark.parametrize(("cls", "name"), HOT, ids=[name for _, name in HOT])
def test_each_hot_operation_is_generated_from_its_source(cls: type, name: str) -> None:
    method = vars(cls)[name]
    plain = method.__wrapped__
    code = method.__code__
    assert "_cancel_pending" in method.__generated_from__
    assert "_cancel_points" in code.co_names, "the check was not compiled in"
    source, first = inspect.getsourcelines(plain)
    assert code.co_firstlineno == first == plain.__code__.co_firstlineno
    assert "self._cancel_pending()" not in "".join(source)  # the core holds the call
    assert method.__qualname__ == f"{cls.__name__}.{name}"
    # what a profiler or a traceback names (the code's own, on Python 3.11+)
    assert getattr(code, "co_qualname", method.__qualname__) == method.__qualname__
    assert method.__module__ == plain.__module__
    assert method.__doc__ == plain.__doc__  # the docstring as written
    generated = generated_source(cls, name)
    assert generated is not None
    # every core it names stands in the generated code as written, but for its
    # returns, which assign the caller's target, the check (compiled in) and the
    # calls of cores within it (inlined in their turn)
    for core in method.__generated_from__:
        if core == "_cancel_pending":
            continue
        for statement in _statements(getattr(cls, core)):
            if statement.startswith("return") or "_cancel_pending()" in statement:
                continue
            if any(f"self.{inner}(" in statement for inner in method.__generated_from__):
                continue  # a core within the core: inlined in its turn
            first_line = statement.splitlines()[0]
            assert first_line in generated, (core, first_line)


@pytest.mark.fastpath
def test_the_generated_code_keeps_the_sources_lines() -> None:
    # a traceback from inside an inlined core names the core's own line in its file
    code = vars(Sending)["send"].__code__
    lines = {line for _, _, line in code.co_lines() if line is not None}
    core_lines = set(range(*_span(Sending._try_send_message)))
    assert lines & core_lines, "the core's statements keep their lines"
    assert code.co_filename == Sending._try_send_message.__code__.co_filename


def _span(function: Any) -> tuple[int, int]:
    source, first = inspect.getsourcelines(function)
    return first, first + len(source)


def test_no_socket_class_overrides_a_core() -> None:
    for base in (Sending, Receiving):
        cores = getattr(base, "__hot_cores__", frozenset())
        if not fastpath.ENABLED:
            continue
        assert cores
        for cls in _subclasses(trizmq.Socket):
            for core in cores:
                assert getattr(cls, core) is getattr(base, core), (cls, core)


def _subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _subclasses(sub)
    return found


class _Sample:
    _cancel_pending: Any = None
    _run_vars: dict[str, Any] = {}  # noqa: RUF012

    def _core_nowait(self, value: int) -> int:
        if value < 0:
            raise ValueError(value)
        if value == 0:
            return 100
        doubled = value * 2
        return doubled

    async def operation(self, value: int) -> int:
        if self._cancel_pending():
            return -1
        result = self._core_nowait(value)
        return result + 1


async def test_a_core_with_early_returns_is_inlined_with_the_same_results(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", True)
    sample = hot_paths(operations=["operation"], cores=["_core_nowait"])(
        type(
            "Sample",
            (_Sample,),
            {"operation": _Sample.operation, "_core_nowait": _Sample._core_nowait},
        )
    )
    made = sample()
    made._cancel_pending = lambda: False  # the check reads _run_vars when inlined

    class _Task:
        class _cancel_status:
            effectively_cancelled = False

        class _runner:
            ki_pending = False
            main_task = None

        _cancel_points = 0

    made._run_vars = {"task": _Task()}
    assert sample.operation.__generated_from__ == ("_core_nowait", "_cancel_pending")
    assert [await made.operation(v) for v in (0, 1, 5)] == [101, 3, 11]
    with pytest.raises(ValueError):
        await made.operation(-1)
    assert "return result + 1" in (generated_source(sample, "operation") or "")


def test_a_shape_it_cannot_take_is_refused_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", True)

    class Clash:
        _cancel_pending: Any = None

        def _core_nowait(self, value: int) -> int:
            other = value
            return other

        async def operation(self, value: int) -> int:
            other = 1
            result = self._core_nowait(value)
            return result + other

    with pytest.raises(HotPathError, match="locals"):
        hot_paths(operations=["operation"], cores=["_core_nowait"])(Clash)

    class Looping:
        _cancel_pending: Any = None

        def _core_nowait(self, value: int) -> int:
            for item in range(value):
                return item
            return 0

        async def operation(self, value: int) -> int:
            result = self._core_nowait(value)
            return result

    with pytest.raises(HotPathError, match="loop"):
        hot_paths(operations=["operation"], cores=["_core_nowait"])(Looping)

    class Nothing:
        async def operation(self) -> None:
            return None

    with pytest.raises(HotPathError, match="nothing to generate"):
        hot_paths(operations=["operation"], cores=[])(Nothing)


def test_a_class_without_a_source_keeps_its_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", True)
    namespace: dict[str, Any] = {}
    exec(
        "class NoSource:\n    async def f(self):\n        if self._cancel_pending():\n"
        "            return 1\n",
        namespace,
    )
    method = namespace["NoSource"].f
    assert hot_paths(operations=["f"], cores=[])(namespace["NoSource"]).f is method


def test_the_switch_off_leaves_the_methods(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fastpath, "ENABLED", False)

    class Off:
        _cancel_pending: Any = None

        async def checks(self) -> None:
            if self._cancel_pending():
                return

    method = Off.checks
    assert hot_paths(operations=["checks"], cores=[])(Off).checks is method
