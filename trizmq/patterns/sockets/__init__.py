"""Socket-type strategies: the routing of each socket family, with no I/O."""

from .base import SocketStrategy
from .pair import PairStrategy
from .pipeline import PullStrategy, PushStrategy
from .pubsub import PubStrategy, SubStrategy, XPubStrategy, XSubStrategy
from .table import STRATEGIES

__all__ = [
    "STRATEGIES",
    "PairStrategy",
    "PubStrategy",
    "PullStrategy",
    "PushStrategy",
    "SocketStrategy",
    "SubStrategy",
    "XPubStrategy",
    "XSubStrategy",
]
