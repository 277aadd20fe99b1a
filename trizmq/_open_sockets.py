"""The process's open sockets, held weakly, and the default name of each for metrics.

A socket adds itself when it is entered and leaves when it closes (two calls in
``trizmq._lifecycle``); nothing here keeps a socket alive. ``trizmq.metrics`` reads
the set at scrape time, from whatever thread the scrape runs in, so every access
takes one lock (an add or a discard per socket's life; a copy per scrape).

A socket's default name is its type in lower case and a number counted per type
in the order the process first saw the sockets of that type (``pub-1``,
``router-2``): stable for the socket's life, never reused.
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter
from typing import Protocol

from ._stats import SocketStats

__all__ = ["Observed", "default_name", "discard", "open_sockets", "opened"]


class Observed(Protocol):
    """What an exporter needs of a socket: whether it is closed, and its snapshot."""

    @property
    def closed(self) -> bool: ...

    def stats(self) -> SocketStats: ...


_lock = threading.Lock()
_open: weakref.WeakSet[Observed] = weakref.WeakSet()
_names: weakref.WeakKeyDictionary[Observed, str] = weakref.WeakKeyDictionary()
_numbers: Counter[str] = Counter()


def _name_locked(sock: Observed) -> str:
    name = _names.get(sock)
    if name is None:
        kind = str(getattr(sock, "socket_type", "") or type(sock).__name__).lower()
        _numbers[kind] += 1
        name = _names[sock] = f"{kind}-{_numbers[kind]}"
    return name


def opened(sock: Observed) -> None:
    """Count ``sock`` among the open sockets (called once it is entered)."""
    with _lock:
        _open.add(sock)
        _name_locked(sock)


def discard(sock: Observed) -> None:
    """``sock`` closed: no longer an open socket."""
    with _lock:
        _open.discard(sock)


def open_sockets() -> list[Observed]:
    """The sockets open now (in no particular order)."""
    with _lock:
        return list(_open)


def default_name(sock: Observed) -> str:
    """``sock``'s default metrics name, ``<type>-<n>`` (given at first sight)."""
    with _lock:
        return _name_locked(sock)
