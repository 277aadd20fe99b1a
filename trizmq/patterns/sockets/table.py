"""One table from socket type to its routing strategy."""

from __future__ import annotations

from .base import SocketStrategy
from .draft import (
    ChannelStrategy,
    ClientStrategy,
    GatherStrategy,
    PeerStrategy,
    ScatterStrategy,
    ServerStrategy,
)
from .pair import PairStrategy
from .pipeline import PullStrategy, PushStrategy
from .pubsub import PubStrategy, SubStrategy, XPubStrategy, XSubStrategy
from .radiodish import DishStrategy, RadioStrategy
from .reqrep import DealerStrategy, RepStrategy, ReqStrategy, RouterStrategy
from .stream import StreamStrategy

__all__ = ["STRATEGIES"]

STRATEGIES: dict[str, type[SocketStrategy]] = {
    cls.socket_type: cls
    for cls in (
        PairStrategy,
        PushStrategy,
        PullStrategy,
        PubStrategy,
        SubStrategy,
        XPubStrategy,
        XSubStrategy,
        ReqStrategy,
        RepStrategy,
        DealerStrategy,
        RouterStrategy,
        StreamStrategy,
        RadioStrategy,
        DishStrategy,
        ClientStrategy,
        ServerStrategy,
        ScatterStrategy,
        GatherStrategy,
        ChannelStrategy,
        PeerStrategy,
    )
}
