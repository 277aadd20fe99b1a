"""The trizmq pytest plugin: fixtures for testing services built on trizmq.

Loaded by itself through the ``pytest11`` entry point once trizmq is installed.
Fixtures (async, run by pytest-trio):

``virtual_network``
    a :class:`~trizmq.testing.VirtualNetwork` installed for the test's ``trio.run``:
    every tcp/ipc endpoint of every socket goes through it, with fault injection.
    It needs virtual time: the test must take pytest-trio's ``autojump_clock`` (or
    ``mock_clock``, or any fixture giving a ``trio.testing.MockClock``) as an
    argument, else the fixture fails with a message saying so.
``zmq_sockets``
    a :class:`~trizmq.testing.SocketFactory`: ``pull = await zmq_sockets(trizmq.Pull,
    bind="tcp://127.0.0.1:0")`` returns an entered socket closed after the test. On
    its own (without ``virtual_network``) it makes sockets on the real network, on
    any clock.

Why a clear error rather than virtual time switched on by the fixture: pytest-trio
hands ``trio.run`` the clock it finds among the *test function's own arguments*, and
a fixture cannot add an argument to the test, nor change the clock of a run already
started. A virtual network on the real clock runs every back-off and timeout in real
time, and a test waiting for a connection that never comes spins on reconnects
instead of failing at its ``fail_after``; so the fixture refuses it. To use the
virtual network on the real clock on purpose, call
:func:`~trizmq.testing.open_virtual_network` in the test.

What a project needs (checked before each test that uses these fixtures, with a
message naming the fix): pytest-trio installed, and the test an ``async def`` run by
it: ``trio_mode = true`` in the pytest configuration, or ``@pytest.mark.trio`` on
the test.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Generator

import pytest
import trio
import trio.testing

from ._network import VirtualNetwork, open_virtual_network
from ._socket_factories import SocketFactory, open_socket_factory

__all__ = ["pytest_runtest_setup", "virtual_network", "zmq_sockets"]

_FIXTURES = ("virtual_network", "zmq_sockets")

_NEEDS_MOCK_CLOCK = (
    "trizmq's virtual_network fixture needs virtual time, but {test} runs on the real "
    "clock: add pytest-trio's autojump_clock fixture to the test's arguments, e.g. "
    "`async def {test}(autojump_clock, virtual_network, ...)`. (pytest-trio takes the "
    "clock of a run only from the test function's own arguments, so the fixture cannot "
    "add it. To use the virtual network on the real clock on purpose, use "
    "`async with trizmq.testing.open_virtual_network():` in the test instead.)"
)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, None, None]:
    """Fail a test that cannot use the fixtures, before its trio run, saying why.

    Before set-up: pytest-trio must be installed and run the test. After set-up
    (where pytest-trio's choice of clock can be seen: a Clock among the test's own
    arguments): ``virtual_network`` needs a ``MockClock``. Failing here makes a plain
    set-up error; the fixture checks the run's clock again in case this could not tell.
    """
    used = [name for name in _FIXTURES if name in getattr(item, "fixturenames", ())]
    if used:
        _check_runner(item, used)
    yield
    if "virtual_network" in used and not _takes_mock_clock(item):
        pytest.fail(_NEEDS_MOCK_CLOCK.format(test=_test_name(item)), pytrace=False)


def _check_runner(item: pytest.Item, used: list[str]) -> None:
    what = f"{item.name} uses trizmq's {' and '.join(used)} fixture{'s' if len(used) > 1 else ''}"
    if not item.config.pluginmanager.hasplugin("trio"):
        pytest.fail(
            f"{what}, but pytest-trio is not installed, and trizmq's fixtures run under it: "
            "pip install pytest-trio, then set trio_mode = true in your pytest configuration",
            pytrace=False,
        )
    function = getattr(item, "obj", None)
    inner = getattr(getattr(function, "hypothesis", None), "inner_test", function)
    if not inspect.iscoroutinefunction(inner):
        pytest.fail(
            f"{what}, but is not an `async def` test: trizmq's fixtures are async "
            "fixtures for the async tests pytest-trio runs",
            pytrace=False,
        )
    if item.get_closest_marker("trio") is None:
        pytest.fail(
            f"{what}, but pytest-trio does not run it: mark it @pytest.mark.trio, or "
            "set trio_mode = true in your pytest configuration ([pytest] in pytest.ini, "
            "or [tool.pytest.ini_options] in pyproject.toml)",
            pytrace=False,
        )


def _takes_mock_clock(item: pytest.Item) -> bool:
    """Whether pytest-trio will run ``item`` on a MockClock (True when it cannot tell)."""
    argnames = getattr(getattr(item, "_fixtureinfo", None), "argnames", None)
    funcargs = getattr(item, "funcargs", None)
    if not isinstance(argnames, tuple) or not isinstance(funcargs, dict):
        return True  # the fixture's own check will tell
    return any(isinstance(funcargs.get(name), trio.testing.MockClock) for name in argnames)


def _test_name(node: pytest.Item | pytest.FixtureRequest) -> str:
    item = node.node if isinstance(node, pytest.FixtureRequest) else node
    return str(getattr(item, "originalname", item.name))


@pytest.fixture
async def virtual_network(request: pytest.FixtureRequest) -> AsyncIterator[VirtualNetwork]:
    """An in-memory network with fault injection for this test's trio run.

    Fails the test at once unless the run has a ``trio.testing.MockClock`` (add
    ``autojump_clock`` to the test's arguments).
    """
    if not isinstance(trio.lowlevel.current_clock(), trio.testing.MockClock):
        pytest.fail(_NEEDS_MOCK_CLOCK.format(test=_test_name(request)), pytrace=False)
    async with open_virtual_network() as network:
        yield network


@pytest.fixture
async def zmq_sockets() -> AsyncIterator[SocketFactory]:
    """A factory of trizmq sockets that close themselves after the test."""
    async with open_socket_factory() as factory:
        yield factory
