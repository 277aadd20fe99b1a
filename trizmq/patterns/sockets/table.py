"""The one table of socket types: each type's row, stated beside its strategy.

A row (:class:`~trizmq.patterns.sockets.socket_type.SocketType`) says everything a
type decides; this module only gathers them, by name. :func:`register_socket_type`
adds a type at run time (a test's, an application's own) and
:func:`unregister_socket_type` takes it out again; the built-in rows are fixed.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING

from .draft import CHANNEL, CLIENT, GATHER, PEER, SCATTER, SERVER
from .pair import PAIR
from .pipeline import PULL, PUSH
from .pubsub import PUB, SUB, XPUB, XSUB
from .radiodish import DISH, RADIO
from .reqrep import DEALER, REP, REQ, ROUTER
from .socket_type import SocketType
from .stream import STREAM

if TYPE_CHECKING:
    from ..._options import Options

__all__ = [
    "SOCKET_TYPES",
    "options_for",
    "register_socket_type",
    "socket_type",
    "unregister_socket_type",
]

_BUILT_IN = (
    PAIR,
    PUSH,
    PULL,
    PUB,
    SUB,
    XPUB,
    XSUB,
    REQ,
    REP,
    DEALER,
    ROUTER,
    STREAM,
    RADIO,
    DISH,
    CLIENT,
    SERVER,
    SCATTER,
    GATHER,
    CHANNEL,
    PEER,
)
_TABLE: dict[str, SocketType] = {row.name: row for row in _BUILT_IN}
#: every socket type by its ZMTP name (read-only; see :func:`register_socket_type`)
SOCKET_TYPES = MappingProxyType(_TABLE)


def socket_type(name: str) -> SocketType:
    """The row of the type ``name``; ``KeyError`` naming it when there is none."""
    try:
        return _TABLE[name]
    except KeyError:
        raise KeyError(f"no socket type {name!r} in the table") from None


def register_socket_type(row: SocketType) -> None:
    """Add a socket type (a socket class whose ``socket_type`` is ``row.name`` then
    works as the built-in ones do); ``ValueError`` for a name already there."""
    if row.name in _TABLE:
        raise ValueError(f"socket type {row.name!r} is in the table already")
    if not row.name:
        raise ValueError(f"{row.strategy.__name__} names no socket_type")
    _TABLE[row.name] = row


def unregister_socket_type(name: str) -> None:
    """Take a type added by :func:`register_socket_type` out again (a no-op if it is
    not there); ``ValueError`` for a built-in type."""
    if any(row.name == name for row in _BUILT_IN):
        raise ValueError(f"{name!r} is a built-in socket type")
    _TABLE.pop(name, None)


def options_for(name: str, given: Mapping[str, object]) -> Options:
    """``given`` checked as the constructor of a ``name`` socket checks them, every
    option's default filled in (``trizmq._options.validate_options`` with the
    type's row)."""
    from ..._options import validate_options

    return validate_options(socket_type(name), given, _TABLE.values())
