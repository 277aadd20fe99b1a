"""trizmq: ZeroMQ for trio, in pure Python.

Sockets are async context managers whose nursery owns every task they run; they
speak ZMTP 3.1 (and accept 3.0 peers) and interoperate with libzmq.
"""

from . import _monitor
from . import auth as auth  # the certificates module, trizmq.auth
from ._errors import (
    EndpointError,
    HostUnreachable,
    NotSupportedError,
    StateError,
    ZMQError,
    ZMQOSError,
)
from ._merge import merge
from ._message import Message
from ._monitor import *  # noqa: F403  (Monitor and its events: the names of its __all__)
from ._proxy import proxy, proxy_steerable
from ._security import (
    CurveClient,
    CurveServer,
    PlainClient,
    PlainServer,
    curve_keypair,
    curve_public,
)
from ._socket import Socket
from ._socket_classes import (
    Channel,
    Client,
    Dealer,
    Dish,
    Gather,
    Pair,
    Peer,
    Pub,
    Pull,
    Push,
    Radio,
    Rep,
    Req,
    Router,
    Scatter,
    Server,
    Stream,
    Sub,
    XPub,
    XSub,
)
from ._stats import PeerStats, SocketStats
from ._zap import Authenticator
from .zmtp import ProtocolError, z85_decode, z85_encode

__all__ = [
    "Authenticator",
    "CurveClient",
    "CurveServer",
    "PlainClient",
    "PlainServer",
    "curve_keypair",
    "curve_public",
    "z85_decode",
    "z85_encode",
    "Channel",
    "Client",
    "Dish",
    "Gather",
    "Peer",
    "Radio",
    "Scatter",
    "Server",
    "PeerStats",
    "SocketStats",
    "Dealer",
    "Rep",
    "Req",
    "Router",
    "EndpointError",
    "HostUnreachable",
    "Message",
    "NotSupportedError",
    "Pair",
    "ProtocolError",
    "Pub",
    "merge",
    "proxy",
    "proxy_steerable",
    "Pull",
    "Push",
    "Socket",
    "StateError",
    "Stream",
    "Sub",
    "XPub",
    "XSub",
    "ZMQError",
    "ZMQOSError",
]
__all__ += _monitor.__all__  # the monitor module lists its public names once, there

__version__ = "0.1.0"

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("trizmq."):
        _obj.__module__ = "trizmq"
del _name, _obj
