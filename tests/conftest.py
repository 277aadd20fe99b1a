"""Shared test set-up: every async test is bounded, so a bug fails instead of hanging.

A test on pytest-trio's ``autojump_clock`` runs in virtual time: its own
``trio.fail_after`` bounds it, and an idle run jumps straight to that deadline, so
the wrapper's real-time-sized bound would only cut virtual sleeps short there.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

#: seconds any single async test may take before it fails with trio.TooSlowError
TEST_DEADLINE = float(os.environ.get("TRIZMQ_TEST_DEADLINE", "60"))


def _bounded(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def wrapper(*args: Any, **kwargs: Any) -> Any:
        if isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock):
            return await fn(*args, **kwargs)
        with trio.fail_after(TEST_DEADLINE):
            return await fn(*args, **kwargs)

    return wrapper


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fn = getattr(item, "obj", None)
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(fn):
            item.obj = _bounded(fn)
