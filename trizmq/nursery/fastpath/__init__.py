"""The fast path: every optimisation that bends a rule, behind one switch.

Everything here is an optimisation of something the portable runtime already does
correctly with trio's public API; set ``TRIZMQ_FASTPATH=0`` in the environment (read
once, when trizmq is imported) or :data:`ENABLED` to False before a socket is
entered, and that socket runs the portable path only. The test suite runs both.
:data:`ENABLED` lives here, and only here: every part reads it from this package
at the moment it decides. So the package imports none of its parts (they import
it): a name is imported from the file that defines it, as in
``from trizmq.nursery.fastpath.direct_io import RawSocket``.

One file per job, each saying which rule it bends:

* ``direct_io`` -- **direct socket I/O** (:class:`RawSocket`, :class:`RawInput`): a
  connection's reader calls ``recv`` on the stream's socket and waits in trio only
  when a call would block, instead of trio's ``SocketStream`` and its reschedule
  after every call. Only POSIX socket streams get it.
* ``write_through`` -- **write-through** (:class:`RawOutput`): the connection writer's
  direct writes, and the socket's sending task writing for an idle writer, encrypted
  connections included (the encoding is the connection's outbound half's,
  ``trizmq.zmtp.outbound``); a publisher's batches are held back instead.
* ``instrument`` -- **the run loop's hook** (:class:`IoWaitHook`): before trio waits for
  I/O, it routes a publisher's gathered messages, releases the batches held back and
  wakes the readers a read-through owes a look.
* ``read_through`` -- **read-through** (:class:`ReadThrough`): a task that would park
  in a receive reads its only peer's connection itself while the reader stands by.
* ``socket_state`` -- **the socket's fast-path state** (:class:`FastPath`): when a send
  may write through, what a receive waits on.
* ``hot_paths`` -- **generated hot paths**: a socket's four hottest operations
  compiled with their cores and the cancellation check inlined, from their source.
* ``tls_input`` -- **TLS reads in one go** (:class:`TlsInput`): every record TLS can
  already decrypt, taken after each awaited read of trio's ``SSLStream``.
* ``trio_probe`` -- **trio's private fields**, read there and nowhere else: the
  inlined cancellation check (:func:`cancel_pending`), the run queue, a trio
  socket's stdlib socket and an ``SSLStream``'s ``ssl.SSLObject``, each probed, each
  with a public fallback.

The order (every import, type-only ones too, points down it; a file names an object
of a file above it by a ``Protocol`` of what it uses, declared beside it):
``socket_state``; ``write_through``; ``direct_io`` and ``tls_input``; ``read_through``;
``instrument``; ``hot_paths``; ``trio_probe``; this package, the switch, at the
bottom (``tests/nursery/test_import_order.py``).
"""

from __future__ import annotations

import os


def _env_enabled() -> bool:
    return os.environ.get("TRIZMQ_FASTPATH", "1").strip().lower() not in ("0", "off", "false", "no")


#: the switch: False makes every socket entered afterwards run the portable path only
ENABLED = _env_enabled()

__all__ = ["ENABLED"]
