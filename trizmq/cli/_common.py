"""What every command shares: errors as one line, running trio with signals, socket types.

Rules:

* A user mistake (bad endpoint, port in use, unknown socket type, bad key, ...) is a
  :class:`CliError`, printed by :func:`trizmq.cli.main` as ONE line on stderr with a
  non-zero exit status, never a traceback. :func:`run` turns the errors trizmq and
  the OS raise for such mistakes (``ZMQError``, ``OSError``) into a ``CliError``,
  looking through trio's exception groups.
* A duration is given in seconds, as a float: every such option is made by
  :func:`seconds_option` (metavar ``SECONDS``, a lower bound, its default shown).
* SIGINT and SIGTERM are handled with :func:`trio.open_signal_receiver`: the command
  is cancelled (its sockets close without linger) and the exit status is
  ``128 + signal`` (130 for Ctrl-C). A ``KeyboardInterrupt`` that arrives before the
  receiver is installed ends the same way.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

import attrs
import click
import trio

import trizmq
from trizmq._socket_classes import _SinglePart
from trizmq.patterns.sockets import SOCKET_TYPES as _TYPE_TABLE

__all__ = [
    "CAN_RECV",
    "CAN_SEND",
    "SINGLE_PART",
    "SOCKET_TYPES",
    "CliError",
    "EndpointSpec",
    "attach",
    "byte_size",
    "make_socket",
    "needs_prometheus_client",
    "parse_side",
    "run",
    "seconds_option",
]

F = TypeVar("F", bound=Callable[..., object])

#: trizmq's socket classes, by the Socket-Type each names
_CLASSES: dict[str, type[trizmq.Socket]] = {
    cls.socket_type: cls
    for cls in (getattr(trizmq, name) for name in trizmq.__all__)
    if isinstance(cls, type) and issubclass(cls, trizmq.Socket) and cls.socket_type
}
#: the rows of the socket-type table the command line takes: those that speak ZMTP
#: (STREAM's peers speak raw tcp)
_ROWS = [row for row in _TYPE_TABLE.values() if row.codec == "zmtp"]
#: every socket type the command line knows, by its lower-case name
SOCKET_TYPES: dict[str, type[trizmq.Socket]] = {
    row.name.lower(): _CLASSES[row.name] for row in _ROWS
}
#: the types that can send / receive, as their strategies say
CAN_SEND = frozenset(row.name.lower() for row in _ROWS if row.strategy.can_send)
CAN_RECV = frozenset(row.name.lower() for row in _ROWS if row.strategy.can_recv)
#: the draft types whose messages have exactly one frame (their classes say so)
SINGLE_PART = frozenset(
    name for name, cls in SOCKET_TYPES.items() if issubclass(cls, _SinglePart)
)


class CliError(trizmq.ZMQError):
    """A user mistake or an environment problem: one line on stderr, exit ``code``.

    A :class:`trizmq.ZMQError`, as every exception trizmq exposes: a program that
    calls the command-line functions catches it with the rest.
    """

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def needs_prometheus_client(what: str) -> None:
    """Raise a :class:`CliError` saying how to install it where prometheus_client is missing."""
    import importlib.util

    if importlib.util.find_spec("prometheus_client") is None:
        raise CliError(f"{what} needs prometheus_client: pip install 'trizmq[metrics]'")


def seconds_option(
    *names: str, minimum: float = 0, default: float | None = None, help: str
) -> Callable[[F], F]:
    """A click option of a duration: a float of seconds, at least ``minimum``.

    Its metavar is ``SECONDS``; a ``default`` is shown in the help (without one the
    option is None when not given).
    """
    return click.option(
        *names,
        type=click.FloatRange(min=minimum),
        default=default,
        show_default=default is not None,
        metavar="SECONDS",
        help=help,
    )


def byte_size(n: float) -> str:
    """``512 B``, ``1.5 KiB``, ... up to GiB: a byte count or rate for a person."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def plural(count: int, noun: str) -> str:
    """``1 message``, ``2 messages``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def describe(exc: BaseException) -> str:
    """The one-line text of an error (``OSError`` without its ``[Errno N]`` prefix)."""
    if isinstance(exc, OSError) and exc.errno is not None and exc.strerror:
        text = exc.strerror
        if exc.filename is not None:
            text = f"{exc.filename}: {text}"
        return text
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())  # one line, whatever the message held


def _leaves(exc: BaseException) -> list[BaseException]:
    # duck-typed: Python 3.10 has no builtin BaseExceptionGroup (trio uses a backport)
    subs = getattr(exc, "exceptions", None)
    if isinstance(subs, tuple) and all(isinstance(e, BaseException) for e in subs):
        out: list[BaseException] = []
        for sub in subs:
            out.extend(_leaves(sub))
        return out
    return [exc]


_USER_ERRORS = (CliError, trizmq.ZMQError, OSError)


@attrs.define
class _State:
    signum: int | None = None


async def _main_with_signals(fn: Callable[[], Awaitable[int | None]], state: _State) -> int:
    code: int | None = 0
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                async for signum in signals:
                    state.signum = signum
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(watch)
            code = await fn()
            nursery.cancel_scope.cancel()
    return code or 0


def run(fn: Callable[[], Awaitable[int | None]]) -> int:
    """Run ``fn`` under trio with signal handling; return the exit status.

    Raises :class:`CliError` for a user mistake found anywhere in ``fn``.
    """
    state = _State()
    try:
        code = trio.run(_main_with_signals, fn, state)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        leaves = [e for e in _leaves(exc) if not isinstance(e, trio.Cancelled)]
        if any(isinstance(e, KeyboardInterrupt) for e in leaves):
            return 130
        if any(isinstance(e, BrokenPipeError) for e in leaves):
            _silence_stdout()
            return 0
        for leaf in leaves:
            if isinstance(leaf, _USER_ERRORS):
                code = leaf.code if isinstance(leaf, CliError) else 1
                raise CliError(describe(leaf), code) from None
        raise
    if state.signum is not None:
        return 128 + state.signum
    return code


def _silence_stdout() -> None:
    """After EPIPE on stdout (``trizmq recv | head``): drop further output quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # pragma: no cover - stdout already gone
        pass


def make_socket(type_name: str, **options: object) -> trizmq.Socket:
    """Build a socket of ``type_name``; option mistakes become a :class:`CliError`."""
    cls = SOCKET_TYPES[type_name]
    try:
        return cls(**options)
    except (TypeError, ValueError) as exc:
        raise CliError(describe(exc)) from None


@attrs.frozen
class EndpointSpec:
    """One endpoint and whether to bind or connect it."""

    action: str  # "bind" or "connect"
    endpoint: str

    def __str__(self) -> str:
        return f"{self.action}:{self.endpoint}"


def endpoint_specs(bind: Iterable[str], connect: Iterable[str]) -> list[EndpointSpec]:
    """``--bind``/``--connect`` values as specs; at least one is required."""
    specs = [EndpointSpec("bind", e) for e in bind] + [EndpointSpec("connect", e) for e in connect]
    if not specs:
        raise CliError("give at least one --bind or --connect endpoint", code=2)
    return specs


def parse_side(text: str, default: str = "bind") -> EndpointSpec:
    """``bind:tcp://...`` / ``connect:tcp://...`` / a bare endpoint (``default`` action)."""
    for action in ("bind", "connect"):
        prefix = action + ":"
        if text.startswith(prefix) and not text.startswith(prefix + "//"):
            return EndpointSpec(action, text[len(prefix) :])
    return EndpointSpec(default, text)


async def attach(sock: trizmq.Socket, specs: Iterable[EndpointSpec], *, announce: bool) -> None:
    """Bind and connect ``sock``; with ``announce``, say on stderr which port a wildcard got."""
    for spec in specs:
        if spec.action == "bind":
            resolved = await sock.bind(spec.endpoint)
            if announce and resolved != spec.endpoint:
                print(f"trizmq: bound {resolved}", file=sys.stderr, flush=True)
        else:
            await sock.connect(spec.endpoint)
