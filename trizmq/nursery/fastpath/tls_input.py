"""TLS reads in one go: every record TLS can decrypt at once, after each awaited read.

The rule it bends: trio's ``SSLStream`` is used through its public calls. Over
``wss://`` a reader here takes, after each awaited ``receive_some`` (which returns
one TLS record of 16 KiB at most and yields), what the stream's ``ssl.SSLObject``
can already decrypt, found through :func:`~.trio_probe.tls_insides` (trio keeps it
private).

The portable path (``TRIZMQ_FASTPATH=0``, or a trio whose insides moved:
:meth:`TlsInput.of` gives None) keeps trio's calls alone:
``tests/nursery/test_tls_reads.py`` checks that choice
(``test_only_a_tls_stream_on_the_fast_path_gets_it``), and its
``test_wss_messages_arrive_whole_and_in_order`` runs on whichever path the
environment chooses.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from .. import fastpath
from ..handshake_io import RECEIVE_SIZE
from .trio_probe import tls_insides

if TYPE_CHECKING:
    from ..pipe import Pipe

__all__ = ["TlsInput"]


class TlsInput:
    """A connection reader's reads on a trio ``SSLStream`` (``wss://``): each awaited
    read is followed by what TLS can decrypt at once from the bytes it holds.

    trio's ``receive_some`` returns one TLS record (16 KiB at most) a call and yields
    after each, while it reads up to 64 KiB of the socket at a time: a stream of
    records cost a read, a parse and a trip through the scheduler each. Here the
    stream's ``ssl.SSLObject`` is asked for more, without I/O, until it wants to read
    the socket (or has something to send: trio sends it at its next call) or
    :data:`RECEIVE_SIZE` is reached. Its ``ssl.SSLObject`` and outgoing ``MemoryBIO``
    are trio's private fields, probed once per stream; a stream without them
    keeps trio's calls alone (:meth:`of` gives None). Any error is left for trio's
    next call to meet and report.
    """

    __slots__ = ("_outgoing", "_read", "_stream")

    def __init__(self, stream: trio.SSLStream[Any], ssl_object: Any, outgoing: Any) -> None:
        self._stream = stream
        self._read: Callable[[int], bytes] = ssl_object.read
        self._outgoing = outgoing

    @classmethod
    def of(cls, stream: trio.abc.Stream) -> TlsInput | None:
        """A :class:`TlsInput` for a trio ``SSLStream`` whose insides are as expected."""
        if not fastpath.ENABLED or not isinstance(stream, trio.SSLStream):
            return None
        insides = tls_insides(stream)
        if insides is None:
            return None
        return cls(stream, *insides)

    def start(self) -> None:
        """Nothing to offer."""

    def stop(self) -> None:
        """Nothing to release."""

    async def receive(self) -> bytes | bytearray:
        """``receive_some``, then what TLS has ready."""
        return self._more(await self._stream.receive_some(RECEIVE_SIZE))

    def _more(self, data: bytes | bytearray) -> bytes | bytearray:
        """``data`` and the records decrypted after it without waiting."""
        if not data or self._outgoing.pending:
            return data
        read = self._read
        pieces = [data]
        size = len(data)
        while size < RECEIVE_SIZE:
            try:
                more = read(RECEIVE_SIZE - size)
            except ssl.SSLError:  # SSLWantReadError above all: the socket's turn
                break
            if not more:
                break
            pieces.append(more)
            size += len(more)
            if self._outgoing.pending:
                break
        return data if len(pieces) == 1 else b"".join(pieces)

    async def after(self, size: int, pipe: Pipe) -> None:
        """trio's stream calls already yield after every read."""
