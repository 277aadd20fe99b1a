"""``inproc://``: in-memory links between the sockets of one ``trio.run``.

No bytes and no ZMTP: a link is two shared :class:`~trizmq.nursery.pipe.Pipe`
objects, one per direction, so whole messages pass as objects. The registry of
bound names lives in a ``trio.lowlevel.RunVar``, so every ``trio.run`` has its own
namespace. Connecting before the name is bound works as in libzmq 4.x: the
connecter's pipes exist at once (messages queue) and are handed to the binder
when it binds.
"""

from __future__ import annotations

from typing import Any

import trio

__all__ = ["InprocRegistry", "registry"]

_REGISTRY: trio.lowlevel.RunVar[InprocRegistry] = trio.lowlevel.RunVar("trizmq_inproc")


class InprocRegistry:
    """Bound inproc names and the connects still waiting for a binder."""

    def __init__(self) -> None:
        #: name -> the binding socket's engine
        self.bound: dict[str, Any] = {}
        #: name -> [(connecting engine, its peer)] waiting for a bind
        self.pending: dict[str, list[tuple[Any, Any]]] = {}

    def bind(self, name: str, engine: Any) -> list[tuple[Any, Any]]:
        """Register ``engine`` under ``name``; return the connects that were waiting."""
        if name in self.bound:
            raise OSError(98, f"inproc://{name} is already bound")
        self.bound[name] = engine
        return self.pending.pop(name, [])

    def unbind(self, name: str, engine: Any) -> None:
        """Forget ``name`` if ``engine`` holds it."""
        if self.bound.get(name) is engine:
            del self.bound[name]

    def wait(self, name: str, engine: Any, peer: Any) -> None:
        """Park a connect until ``name`` is bound."""
        self.pending.setdefault(name, []).append((engine, peer))

    def forget(self, engine: Any, peer: Any = None) -> None:
        """Drop waiting connects of ``engine`` (all of them, or the one for ``peer``)."""
        for name, waiting in list(self.pending.items()):
            kept = [
                (e, p)
                for e, p in waiting
                if e is not engine or (peer is not None and p is not peer)
            ]
            if kept:
                self.pending[name] = kept
            else:
                del self.pending[name]


def registry() -> InprocRegistry:
    """The inproc namespace of the current ``trio.run``."""
    try:
        return _REGISTRY.get()
    except LookupError:
        reg = InprocRegistry()
        _REGISTRY.set(reg)
        return reg
