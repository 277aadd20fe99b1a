"""The fast path: every optimisation that bends a rule, behind one switch.

Everything here is an optimisation of something the portable runtime already does
correctly with trio's public API; set ``TRIZMQ_FASTPATH=0`` in the environment (read
once, when trizmq is imported) or :data:`ENABLED` to False before a socket is
entered, and that socket runs the portable path only. The test suite runs both.
:data:`ENABLED` lives here, and only here: every part reads it from this package
at the moment it decides.

One file per job, each saying which rule it bends:

* ``direct_io`` -- **direct socket I/O** (:class:`RawSocket`, :class:`RawInput`): a
  connection's reader calls ``recv`` on the stream's socket and waits in trio only
  when a call would block, instead of trio's ``SocketStream`` and its reschedule
  after every call. Only POSIX socket streams get it.
* ``write_through`` -- **write-through** (:class:`RawOutput`): the connection writer's
  direct writes, and the socket's sending task writing for an idle writer, encrypted
  connections included; a publisher's batches are held back by corks instead.
* ``instrument`` -- **the run loop's hook** (:class:`Revival`): before trio waits for
  I/O, it routes a publisher's gathered messages, takes the corks off and wakes the
  readers a read-through owes a look.
* ``read_through`` -- **read-through** (:class:`ReadThrough`): a task that would park
  in a receive reads its only peer's connection itself while the reader stands by.
* ``routing`` -- **the socket's fast-path state** (:class:`FastPath`): when a send
  may write through, what a receive waits on.
* ``framing`` -- **short-message framing**: runs of messages encoded at C speed, once
  for all the subscribers of a publisher (the writer uses it on both paths).
* ``tls_input`` -- **TLS reads in one go** (:class:`TlsInput`): every record TLS can
  already decrypt, taken after each awaited read of trio's ``SSLStream``.
* ``trio_probe`` -- **trio's private fields**, read there and nowhere else: the
  inlined cancellation check (:func:`cancel_pending`), the run queue, a trio
  socket's stdlib socket and an ``SSLStream``'s ``ssl.SSLObject``, each probed, each
  with a public fallback.
"""

from __future__ import annotations

import os


def _env_enabled() -> bool:
    return os.environ.get("TRIZMQ_FASTPATH", "1").strip().lower() not in ("0", "off", "false", "no")


#: the switch: False makes every socket entered afterwards run the portable path only
ENABLED = _env_enabled()

# the parts read ENABLED from this package when they decide, so they come after it
from .direct_io import LOOK_AGAIN_AFTER, RawInput, RawSocket, _InputEnded  # noqa: E402
from .framing import (  # noqa: E402
    BIG_FRAME,
    RUN_BYTES,
    SHORT_HEADER,
    _split_sent,
    encode_big,
    encode_run,
    frame_short_messages,
    leading_runs,
    run_sealer,
)
from .instrument import (  # noqa: E402
    _REVIVAL,
    CORK_ITEMS,
    CORK_TIME,
    Revival,
    _nothing,
    cork_limit,
    revival,
)
from .read_through import ReadThrough  # noqa: E402
from .routing import FastPath  # noqa: E402
from .tls_input import TlsInput  # noqa: E402
from .trio_probe import RUN_CONTEXT, cancel_pending, inline_cancel_checks, run_vars  # noqa: E402
from .trio_probe import anything_runnable as _anything_runnable  # noqa: E402
from .write_through import WRITE_BATCH, RawOutput  # noqa: E402

__all__ = [
    "BIG_FRAME",
    "CORK_ITEMS",
    "CORK_TIME",
    "ENABLED",
    "LOOK_AGAIN_AFTER",
    "RUN_BYTES",
    "RUN_CONTEXT",
    "SHORT_HEADER",
    "WRITE_BATCH",
    "FastPath",
    "RawInput",
    "RawOutput",
    "RawSocket",
    "ReadThrough",
    "Revival",
    "TlsInput",
    "_InputEnded",
    "_REVIVAL",
    "_anything_runnable",
    "_nothing",
    "_split_sent",
    "cancel_pending",
    "cork_limit",
    "encode_big",
    "encode_run",
    "frame_short_messages",
    "inline_cancel_checks",
    "leading_runs",
    "revival",
    "run_sealer",
    "run_vars",
]
