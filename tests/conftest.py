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


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "fastpath: tests an optimisation of trizmq.nursery.fastpath; skipped when the fast "
        "path is switched off (TRIZMQ_FASTPATH=0), as the portable run of the suite does",
    )


def pytest_report_header() -> str:
    """Which trio this run has, and what the fast path's probes made of it: ``make
    test`` runs the suite against the oldest trio pyproject.toml admits and the
    newest (tests/fastpath_probes.py)."""
    from fastpath_probes import run_probes

    return run_probes().describe()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from trizmq.nursery import fastpath

    for item in items:
        if not fastpath.ENABLED and item.get_closest_marker("fastpath") is not None:
            item.add_marker(pytest.mark.skip(reason="the fast path is off (TRIZMQ_FASTPATH=0)"))
        fn = getattr(item, "obj", None)
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(fn):
            item.obj = _bounded(fn)
