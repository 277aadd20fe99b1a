"""Sockets' counters exported to Prometheus and OpenTelemetry (the extra ``trizmq[metrics]``).

Nothing is counted here: every socket counts always (``sock.stats()``), and the
exporters read the counters when they are scraped or collected.

Prometheus (``prometheus_client``)::

    trizmq.metrics.register(sock, name="frontend")   # one socket
    trizmq.metrics.register_all()                    # every socket of the process
    server = trizmq.metrics.serve(9100)              # http://127.0.0.1:9100/metrics

OpenTelemetry (``opentelemetry-api``)::

    trizmq.metrics.instrument_otel(meter_provider)   # every socket of the process

Each half imports its library only when first used, so either works without the
other installed. See docs/observability.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._otel import INSTRUMENTS, OtelInstrumentation, instrument_otel
    from ._prometheus import (
        PEER_METRICS,
        SOCKET_METRICS,
        MetricsServer,
        SocketCollector,
        collector,
        register,
        register_all,
        serve,
        unregister,
    )

__all__ = [
    "INSTRUMENTS",
    "PEER_METRICS",
    "SOCKET_METRICS",
    "MetricsServer",
    "OtelInstrumentation",
    "SocketCollector",
    "collector",
    "instrument_otel",
    "register",
    "register_all",
    "serve",
    "unregister",
]

#: each half's private module and the distribution it needs
_PROMETHEUS = ("._prometheus", "prometheus_client")
_OTEL = ("._otel", "opentelemetry-api")
#: the OpenTelemetry half's public names; every other public name is the Prometheus half's
_OTEL_NAMES = frozenset({"INSTRUMENTS", "OtelInstrumentation", "instrument_otel"})


def __getattr__(name: str) -> object:
    if name not in __all__:
        raise AttributeError(f"module 'trizmq.metrics' has no attribute {name!r}")
    module_name, needs = _OTEL if name in _OTEL_NAMES else _PROMETHEUS
    try:
        module = importlib.import_module(module_name, __name__)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"trizmq.metrics.{name} needs {needs} ({exc.name} is missing): "
            "pip install 'trizmq[metrics]'",
            name=exc.name,
        ) from exc
    value = getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
