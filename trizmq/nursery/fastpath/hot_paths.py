"""Generated hot paths: a socket's awaiting operations compiled with their cores inlined.

The rule it bends: a method runs as written. Each awaiting operation of a socket
(``send``, ``recv``, ...) is written once, in plain Python, on its cores: the one
awaiting shape (``_send_message``: trio's checkpoint, the core, a park where the
core would block, a turn counted) and the core itself (``_try_send_message``). A
call costs a few percent of an inproc message, so on the fast path the operations
a class lists are compiled again from their source with

* the body of each core it lists, where an operation calls it as a statement
  (``x = self.core(...)``, ``x = await self.core(...)`` or the call alone), in
  place of the call, its ``return`` statements turned into assignments to ``x`` (a
  core returns only at the end of its branches: see :func:`_tail`), cores within
  cores too; its parameters must be passed by their own names; and
* the cancellation check the trio probe hands out (``if self._cancel_pending():``)
  in place of that call, as :mod:`~.trio_probe` writes it.

Nothing else changes: names, line numbers (each inlined statement keeps its own
line, so a core and its operations live in one file), qualified names and
docstrings are the source's. :func:`generated_source` gives what runs as source
(``python -m benchmarks.hot_paths`` prints every one), and
``tests/nursery/test_hot_paths.py`` holds it to the source: every listed operation
is generated, each core's statements stand in it as written, and the whole suite
runs both forms (``TRIZMQ_FASTPATH=0`` keeps the plain methods).

A listed operation that cannot be generated from its source (a closure, a private
name a class body would mangle, a core whose locals clash with the caller's, a
``return`` inside a loop) raises :class:`HotPathError` at import: a change that
would turn the generation off says so at once. Only a method whose source cannot
be read at all (a frozen or source-less install) keeps its calls.
"""

from __future__ import annotations
import __future__

import ast
import copy
import inspect
import textwrap
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from ..._errors import ZMQError
from .. import fastpath
from .trio_probe import inline_the_check

__all__ = ["HotPathError", "generated_source", "hot_paths"]

T = TypeVar("T", bound=type)

#: generated source of each (class, method), for generated_source()
_GENERATED: dict[tuple[type, str], str] = {}


class HotPathError(ZMQError, TypeError):
    """A listed hot path cannot be generated from its source (a bug of the source)."""


def hot_paths(*, operations: Iterable[str], cores: Iterable[str]) -> Callable[[T], T]:
    """Generate the awaiting ``operations`` of the decorated class with its ``cores``
    inlined (see the module docstring); the class as it is with the fast path off.
    A subclass must not override a core (its operations would not see it)."""
    core_names = frozenset(cores)

    def generate(cls: T) -> T:
        if not fastpath.ENABLED:
            return cls
        for name in operations:
            method = vars(cls).get(name)
            if not inspect.iscoroutinefunction(method):
                raise HotPathError(f"{cls.__name__}.{name} is no coroutine function of its own")
            generated = _generate(cls, method, core_names)
            if generated is not None:
                setattr(cls, name, generated)
        cls.__hot_cores__ = core_names  # type: ignore[attr-defined]
        return cls

    return generate


def generated_source(cls: type, name: str) -> str | None:
    """The source of the generated ``cls.name`` (None where it was not generated)."""
    return _GENERATED.get((cls, name))


# -- reading sources ------------------------------------------------------------------------
def _definition(function: Callable[..., Any]) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """``function``'s definition, parsed from its source at its own line numbers; None
    where its source cannot be read."""
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    tree = ast.parse(source)
    ast.increment_lineno(tree, function.__code__.co_firstlineno - 1)
    (definition,) = tree.body
    assert isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef))
    return definition


def _assigned(nodes: Iterable[ast.AST]) -> set[str]:
    """Every name the statements bind (assignments, loop targets, imports aside)."""
    names: set[str] = set()
    for node in nodes:
        for part in ast.walk(node):
            if isinstance(part, ast.Name) and isinstance(part.ctx, ast.Store):
                names.add(part.id)
    return names


def _check_plain(cls: type, definition: ast.AST, where: str) -> None:
    for node in ast.walk(definition):
        attr = node.attr if isinstance(node, ast.Attribute) else ""
        if attr.startswith("__") and not attr.endswith("__"):
            raise HotPathError(f"{where}: a private name ({attr}) would be mangled")
        nested = isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef))
        if nested and node is not definition:
            raise HotPathError(f"{where}: a nested function or lambda")


# -- the cores ------------------------------------------------------------------------------
def _exits(stmts: list[ast.stmt]) -> bool:
    """Whether every path through ``stmts`` ends in a return or a raise."""
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _exits(last.body) and _exits(last.orelse)
    return False


def _tail(stmts: list[ast.stmt], result: str | None, where: str) -> list[ast.stmt]:
    """``stmts`` (a core's body, or part of it) with every ``return`` made the end of
    its branch (an ``if`` whose branch returns takes the statements after it as its
    other branch), each ``return X`` then an assignment ``result = X`` (or, for a
    core called for nothing, ``X`` dropped: it must return nothing)."""
    out: list[ast.stmt] = []
    for index, stmt in enumerate(stmts):
        rest = stmts[index + 1 :]
        if isinstance(stmt, ast.Return):
            if result is not None:
                value = stmt.value if stmt.value is not None else ast.Constant(None)
                if not (isinstance(value, ast.Name) and value.id == result):  # not x = x
                    assign = ast.Assign(targets=[ast.Name(result, ast.Store())], value=value)
                    out.append(ast.copy_location(assign, stmt))
            elif stmt.value is not None and not (
                isinstance(stmt.value, ast.Constant) and stmt.value.value is None
            ):
                raise HotPathError(f"{where}: a core called for nothing returns a value")
            return out  # what follows a return never runs
        if isinstance(stmt, ast.If) and any(
            isinstance(node, ast.Return) for node in ast.walk(stmt)
        ):
            branch = copy.copy(stmt)
            body = stmt.body if _exits(stmt.body) else [*stmt.body, *rest]
            orelse = stmt.orelse if _exits(stmt.orelse) else [*stmt.orelse, *rest]
            branch.body = _tail(body, result, where) or [ast.copy_location(ast.Pass(), stmt)]
            branch.orelse = _tail(orelse, result, where)
            out.append(branch)
            return out  # the statements after it went into its branches
        for node in ast.walk(stmt):
            if isinstance(node, ast.Return):
                raise HotPathError(f"{where}: a return inside a loop, a try or a with")
        out.append(stmt)
    return out


class _InlineCores(ast.NodeTransformer):
    """``x = self.core(...)``, ``x = await self.core(...)`` and the calls alone become
    the core's body."""

    def __init__(self, cls: type, caller: str, caller_names: set[str], cores: frozenset[str]):
        self.cls = cls
        self.caller = caller
        self.caller_names = caller_names
        self.cores = cores
        self.inlined: list[str] = []

    def _core_call(self, value: ast.expr | None) -> tuple[str, ast.Call, bool] | None:
        awaited = isinstance(value, ast.Await)
        if awaited:
            value = value.value  # type: ignore[union-attr]
        if not (
            isinstance(value, ast.Call)
            and isinstance(value.func, ast.Attribute)
            and isinstance(value.func.value, ast.Name)
            and value.func.value.id == "self"
            and value.func.attr in self.cores
        ):
            return None
        return value.func.attr, value, awaited

    def visit_Expr(self, node: ast.Expr) -> Any:
        found = self._core_call(node.value)
        return node if found is None else self._inline(*found, result=None)

    def visit_Assign(self, node: ast.Assign) -> Any:
        found = self._core_call(node.value)
        if found is None or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            return node
        return self._inline(*found, result=node.targets[0].id)

    def _inline(
        self, name: str, call: ast.Call, awaited: bool, *, result: str | None
    ) -> list[ast.stmt]:
        where = f"{self.cls.__name__}.{self.caller} inlining {name}"
        core = vars(self.cls).get(name)
        if not inspect.isfunction(core):
            raise HotPathError(f"{where}: a core is a method of the class itself")
        if core.__code__.co_filename != _filename_of(self.cls, self.caller):
            raise HotPathError(f"{where}: a core lives in its operation's file (line numbers)")
        definition = _definition(core)
        if definition is None or isinstance(definition, ast.AsyncFunctionDef) is not awaited:
            raise HotPathError(f"{where}: a core is awaited where it is async, with a source")
        _check_plain(self.cls, definition, where)
        arguments = definition.args
        params = [a.arg for a in arguments.args[1:]] + [a.arg for a in arguments.kwonlyargs]
        passed = [a.id for a in call.args if isinstance(a, ast.Name)]
        passed += [
            k.arg
            for k in call.keywords
            if isinstance(k.value, ast.Name) and k.value.id == k.arg
        ]
        if (
            len(passed) != len(call.args) + len(call.keywords)
            or passed[: len(call.args)] != params[: len(call.args)]
            or sorted(passed) != sorted(params)
            or arguments.vararg
            or arguments.kwarg
        ):
            raise HotPathError(f"{where}: its parameters are passed by their own names")
        body = list(definition.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # the docstring
        locals_ = _assigned(body) - set(params)
        clash = locals_ & self.caller_names - {result}
        if clash:
            raise HotPathError(f"{where}: its locals {sorted(clash)} are the caller's too")
        self.caller_names |= locals_
        self.inlined.append(name)
        inlined = _tail(body, result, where)
        # a core may itself call cores: they are inlined too
        return [node for stmt in inlined for node in _as_list(self.visit(stmt))]


def _as_list(node: Any) -> list[ast.stmt]:
    return node if isinstance(node, list) else [node]


def _filename_of(cls: type, name: str) -> str:
    function = vars(cls)[name]
    return str(function.__code__.co_filename)


# -- generating one operation -------------------------------------------------------------------
def _generate(
    cls: type, method: Callable[..., Any], core_names: frozenset[str]
) -> Callable[..., Any] | None:
    code = method.__code__
    where = f"{cls.__name__}.{method.__name__}"
    definition = _definition(method)
    if definition is None:
        return None  # no source to read: the call stays
    if code.co_freevars:
        raise HotPathError(f"{where}: a closure")
    if definition.decorator_list:
        raise HotPathError(f"{where}: a decorated method")
    _check_plain(cls, definition, where)
    names = _assigned(definition.body)
    names |= {a.arg for a in ast.walk(definition.args) if isinstance(a, ast.arg)}
    cores = _InlineCores(cls, method.__name__, names, core_names)
    definition = cores.visit(definition)
    checks = inline_the_check(definition)
    if not cores.inlined and not checks:
        raise HotPathError(f"{where}: nothing to generate (no core, no check)")
    module = ast.fix_missing_locations(ast.Module(body=[definition], type_ignores=[]))
    flags = __future__.annotations.compiler_flag
    compiled = compile(module, code.co_filename, "exec", flags=flags, dont_inherit=True)
    namespace: dict[str, Any] = {}
    exec(compiled, method.__globals__, namespace)
    generated: Callable[..., Any] = namespace[method.__name__]
    generated.__qualname__ = method.__qualname__
    if hasattr(code, "co_qualname"):  # Python 3.11: what profilers and tracebacks name
        # a keyword mypy, checking against Python 3.10, would not know as one
        qualname = {"co_qualname": code.co_qualname}
        generated.__code__ = generated.__code__.replace(**qualname)
    generated.__module__ = method.__module__
    generated.__doc__ = method.__doc__  # as indented in the class (the source was dedented)
    generated.__wrapped__ = method  # type: ignore[attr-defined]
    generated.__generated_from__ = (*cores.inlined, *(["_cancel_pending"] if checks else []))  # type: ignore[attr-defined]
    _GENERATED[(cls, method.__name__)] = ast.unparse(definition)
    return generated
