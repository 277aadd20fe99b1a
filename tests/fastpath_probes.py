"""What the fast path's probes make of the installed trio.

The fast path (``trizmq.nursery.fastpath``) reads trio's private fields where it
finds them as it expects and otherwise keeps trio's public API: the inlined
cancellation check (``cancel_pending()``), the running task read from trio's run
context (``run_vars()``), and the TLS reads' ``SSLStream`` insides
(``TlsInput.of``); and it compiles the cancellation check into the socket's hot
paths (``inline_cancel_checks``), bytecode that each interpreter compiles its own way.
``make test`` runs the suite against the oldest trio that pyproject.toml admits and
against the newest, and under every CPython from 3.10 to 3.13 the machine has; the
report header of each run says which interpreter and trio it had and what the probes
made of them (``tests/conftest.py``), and
``tests/test_trio_versions.py`` checks the probes against trio's fields, looked at
here independently of them.
"""

from __future__ import annotations

import platform
import ssl
from dataclasses import dataclass

import trio
import trio.testing

from trizmq.nursery import fastpath
from trizmq.nursery.fastpath import trio_probe
from trizmq.nursery.fastpath.tls_input import TlsInput

#: each probe by name, as the report header and the test name them
PROBES = ("cancel check", "run context", "TLS reads")


@dataclass(frozen=True)
class ProbeReport:
    """One run of the probes: per probe, True where it accepted this trio (under this
    interpreter)."""

    trio_version: str
    enabled: bool
    accepted: dict[str, bool]
    #: "CPython 3.13.0", the interpreter the probes ran under
    interpreter: str = f"{platform.python_implementation()} {platform.python_version()}"

    @property
    def refused(self) -> list[str]:
        return [name for name in PROBES if not self.accepted[name]]

    def describe(self) -> str:
        head = f"{self.interpreter}, trio {self.trio_version}"
        if not self.enabled:
            return f"{head}: fast path off (TRIZMQ_FASTPATH=0), the portable path only"
        if not self.refused:
            return (
                f"{head}: fast path on, its probes accept this interpreter and trio "
                f"({', '.join(PROBES)})"
            )
        return (
            f"{head}: fast path on, but its probes REFUSE this interpreter and trio for "
            f"{', '.join(self.refused)}: the portable path runs there"
        )


def _tls_stream() -> trio.abc.Stream:
    """An ``SSLStream`` on memory streams, never handshaken: its insides exist from
    construction on."""
    left, _ = trio.testing.memory_stream_pair()
    return trio.SSLStream(left, ssl.create_default_context(), server_hostname="localhost")


def accepted_now() -> dict[str, bool]:
    """Per probe, whether it accepts the installed trio (call it inside a ``trio.run``)."""
    return {
        "cancel check": trio_probe.cancel_pending() is not None,
        "run context": trio_probe.run_vars() is not None,
        "TLS reads": TlsInput.of(_tls_stream()) is not None,
    }


def run_probes() -> ProbeReport:
    """Ask each probe about the installed trio (from outside any ``trio.run``)."""

    async def inside() -> dict[str, bool]:
        return accepted_now()

    return ProbeReport(trio.__version__, fastpath.ENABLED, trio.run(inside))


def fields_found() -> dict[str, bool]:
    """Per probe, whether trio has the private fields it reads, looked at here without
    the probes (call it inside a ``trio.run``)."""
    task = trio.lowlevel.current_task()
    try:
        from trio._core._run import GLOBAL_RUN_CONTEXT as context
    except ImportError:
        context = None
    try:
        cancel = (
            context is not None
            and context.task is task
            and isinstance(task._cancel_status.effectively_cancelled, bool)
            and isinstance(task._runner.ki_pending, bool)
            and task._runner.main_task is not None
            and isinstance(task._cancel_points, int)
        )
    except AttributeError:
        cancel = False
    values = getattr(context, "__dict__", None)
    stream = _tls_stream()
    return {
        "cancel check": cancel,
        "run context": isinstance(values, dict) and values.get("task") is task,
        "TLS reads": isinstance(getattr(stream, "_ssl_object", None), ssl.SSLObject)
        and isinstance(getattr(stream, "_outgoing", None), ssl.MemoryBIO),
    }
