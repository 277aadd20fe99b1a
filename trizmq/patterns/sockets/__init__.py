"""Socket-type strategies: the routing of each socket family, with no I/O."""

from .base import SocketStrategy
from .pair import PairStrategy
from .pipeline import PullStrategy, PushStrategy
from .pubsub import PubStrategy, SubStrategy, XPubStrategy, XSubStrategy
from .reqrep import DealerStrategy, RepStrategy, ReqStrategy, RouterStrategy
from .table import STRATEGIES

__all__ = [
    "STRATEGIES",
    "DealerStrategy",
    "RepStrategy",
    "ReqStrategy",
    "RouterStrategy",
    "PairStrategy",
    "PubStrategy",
    "PullStrategy",
    "PushStrategy",
    "SocketStrategy",
    "SubStrategy",
    "XPubStrategy",
    "XSubStrategy",
]
