"""Endpoints: ``transport://address`` text parsed into :class:`Endpoint`.

The parsing itself is each transport's (``trizmq.transport``): this module names
the entry points the rest of trizmq uses.
"""

from __future__ import annotations

from .transport import SUPPORTED_TRANSPORTS, Endpoint, parse_endpoint
from .transport.addresses import INPROC_NAME_MAX, IPC_PATH_MAX

__all__ = [
    "INPROC_NAME_MAX",
    "IPC_PATH_MAX",
    "SUPPORTED_TRANSPORTS",
    "Endpoint",
    "parse_endpoint",
]
