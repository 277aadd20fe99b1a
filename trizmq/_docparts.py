"""The parts of public docstrings that several methods document alike, written once.

Twin methods (``send`` and ``send_nowait``, the receives, ``unbind`` and
``disconnect``) raise the same errors for the same reasons and take the same
arguments: their docstrings name such a part by a line that holds only its name in
braces (``{recv_state_errors}``), and :func:`shares_doc`, on their class, puts the
part's text there, indented as that line is. The text a reader gets from ``help()`` and the API
reference is whole; a change of the rules is one change here.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import TypeVar

__all__ = ["PARTS", "shares_doc"]

T = TypeVar("T", bound=Callable[..., object])

#: the shared parts by name, each as it stands under its section (no indentation)
PARTS: dict[str, str] = {
    # a socket's state, for what needs it open and entered
    "state_errors": (
        "trio.ClosedResourceError: once the socket is closed.\n"
        "RuntimeError: before the socket is entered."
    ),
    # the receives that do not wait
    "recv_state_errors": (
        "trio.ClosedResourceError: once the socket is closed.\n"
        "trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).\n"
        "RuntimeError: before the socket is entered."
    ),
    # the receives that wait
    "recv_wait_errors": (
        "trio.ClosedResourceError: once the socket is closed (also for a call waiting).\n"
        "trizmq.NotSupportedError: on a type that cannot receive (PUSH, PUB).\n"
        "RuntimeError: before the socket is entered."
    ),
    # Radio.send and Radio.send_nowait
    "radio_send_args": (
        "data: the one frame of the message, bytes-like.\n"
        "group: the group, 0-255 bytes without a NUL byte; a ``str`` is UTF-8\n"
        "    encoded.\n"
        "more: must be False (a RADIO message has one frame)."
    ),
    "radio_send_errors": (
        "ValueError: for an invalid group, or ``more=True``.\n"
        "TypeError: for a group that is neither bytes nor ``str``, or a frame that\n"
        "    is not bytes-like.\n"
        "trio.ClosedResourceError: once the socket is closed."
    ),
    # the virtual network's faults and counts that take an endpoint or None
    "fault_endpoint_or_none": "endpoint: An endpoint naming the listener, or None for every link.",
    "fault_endpoint": "endpoint: An endpoint naming the listener.",
    "fault_endpoint_errors": (
        "TypeError: If ``endpoint`` is not a ``str``.\n"
        "ValueError: If ``endpoint`` is not a tcp or ipc endpoint with a port or path."
    ),
    "fault_endpoint_or_none_errors": (
        "TypeError: If ``endpoint`` is not a ``str`` (or None).\n"
        "ValueError: If ``endpoint`` is not a tcp or ipc endpoint with a port or\n"
        "    path."
    ),
}

_MARKER = re.compile(r"^([ \t]*)\{([a-z_]+)\}[ \t]*$", re.M)


def shares_doc(obj: T) -> T:
    """Put the :data:`PARTS` that docstrings name in their places.

    Given a class, every function defined in its body whose docstring names a part
    (apply it below a class decorator that rewrites methods, such as
    ``hot_paths``, which copies the completed docstring); given a function, its own.

    Args:
        obj: a class, or a function whose docstring holds lines such as
            ``{state_errors}``.

    Returns:
        ``obj`` itself, its docstrings completed.

    Raises:
        KeyError: for a name that is not a part (at import, where it is written).
        ValueError: for a function, or a class, whose docstrings name no part.
    """
    functions = (
        [value for value in vars(obj).values() if inspect.isfunction(value)]
        if isinstance(obj, type)
        else [obj]
    )
    filled = sum(_fill(function) for function in functions)
    if not filled:
        raise ValueError(f"{getattr(obj, '__qualname__', obj)}: no docstring names a shared part")
    return obj


def _fill(function: Callable[..., object]) -> bool:
    """Complete ``function``'s docstring; whether it named a part."""

    def part(match: re.Match[str]) -> str:
        indent, name = match.groups()
        return "\n".join(indent + line for line in PARTS[name].splitlines())

    doc, count = _MARKER.subn(part, function.__doc__ or "")
    if count:
        function.__doc__ = doc
    return bool(count)
