"""Socket-type strategies: the routing of each socket family, with no I/O, and the
one table of socket types (each type's row stated beside its strategy)."""

from .base import SocketStrategy
from .pair import PairStrategy
from .pipeline import PullStrategy, PushStrategy
from .pubsub import PubStrategy, SubStrategy, XPubStrategy, XSubStrategy
from .reqrep import DealerStrategy, RepStrategy, ReqStrategy, RouterStrategy
from .socket_type import SocketType
from .table import (
    SOCKET_TYPES,
    options_for,
    register_socket_type,
    socket_type,
    unregister_socket_type,
)

__all__ = [
    "SOCKET_TYPES",
    "DealerStrategy",
    "PairStrategy",
    "PubStrategy",
    "PullStrategy",
    "PushStrategy",
    "RepStrategy",
    "ReqStrategy",
    "RouterStrategy",
    "SocketStrategy",
    "SocketType",
    "SubStrategy",
    "XPubStrategy",
    "XSubStrategy",
    "options_for",
    "register_socket_type",
    "socket_type",
    "unregister_socket_type",
]
