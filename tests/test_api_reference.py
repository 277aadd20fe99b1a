"""The API reference documents every public object: a summary line, and for what
takes parameters an ``Args:`` entry for each, a ``Returns:`` (or ``Yields:``) for what
returns something (Google style, rendered by napoleon in the strict Sphinx build).

Public: the names in ``__all__`` of ``trizmq``, ``trizmq.auth`` and ``trizmq.testing``,
and the public methods and properties their classes define themselves.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from typing import Any

import pytest

import trizmq
import trizmq.auth
import trizmq.testing

MODULES = (trizmq, trizmq.auth, trizmq.testing)
_SKIP_PARAMS = {"self", "cls"}


def public_objects() -> Iterator[tuple[str, Any]]:
    seen: set[int] = set()
    for module in MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            qualified = f"{module.__name__}.{name}"
            yield qualified, obj
            if inspect.isclass(obj):
                for attr, value in vars(obj).items():
                    if attr.startswith("_"):
                        continue
                    if isinstance(value, (staticmethod, classmethod)):
                        value = value.__func__
                    if inspect.isfunction(value) or isinstance(value, property):
                        yield f"{qualified}.{attr}", value


def _own_init(cls: type) -> bool:
    """Whether a trizmq class (or a base of it in trizmq) defines ``__init__``."""
    for base in cls.__mro__:
        if "__init__" in vars(base):
            return base.__module__.startswith("trizmq")
    return False


def _section(doc: str, title: str) -> str:
    match = re.search(rf"^\s*{title}:\s*$(.*?)(?=^\s*[A-Z][a-z]+:\s*$|\Z)", doc, re.M | re.S)
    return match.group(1) if match else ""


def problems(name: str, obj: Any) -> list[str]:
    doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj) or ""
    if not doc.strip():
        return ["no docstring"]
    found = []
    target = obj.__init__ if inspect.isclass(obj) else obj
    if isinstance(obj, property) or not callable(target):
        return found
    if inspect.isclass(obj) and not _own_init(obj):
        return found
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return found
    # a class lists its constructor's parameters under Args: (or, for a record of
    # fields such as a monitor event, under Attributes:)
    args = _section(doc, "Args") + (_section(doc, "Attributes") if inspect.isclass(obj) else "")
    for param in signature.parameters.values():
        if param.name in _SKIP_PARAMS:
            continue
        shown = param.name
        if param.kind is param.VAR_KEYWORD:
            shown = rf"\*\*{param.name}"
        elif param.kind is param.VAR_POSITIONAL:
            shown = rf"\*{param.name}"
        if not re.search(rf"^\s*{shown}\b[^:\n]*:", args, re.M):
            found.append(f"parameter {param.name!r} not under Args:")
    if not inspect.isclass(obj):
        annotation = signature.return_annotation
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        returns_something = annotation is not inspect.Signature.empty and text not in (
            "None",
            "NoReturn",
            "Never",
            "",
        )
        if returns_something and not re.search(r"^\s*(Returns|Yields):", doc, re.M):
            found.append("no Returns:/Yields: section")
    return found


OBJECTS = list(public_objects())


def test_there_is_a_public_api() -> None:
    assert len(OBJECTS) > 100


@pytest.mark.parametrize(("name", "obj"), OBJECTS, ids=[name for name, _ in OBJECTS])
def test_documented(name: str, obj: Any) -> None:
    assert not problems(name, obj), problems(name, obj)
