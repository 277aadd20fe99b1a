"""What the transports over an operating-system socket share (tcp, ipc, udp).

Rules:

* A socket being set up (bound, put to listen, connected) is closed if anything in
  its setup fails, cancellation included: :func:`closed_on_error` around the setup.
  Where the caller says what it was doing, an ``OSError`` goes on as a
  :class:`~trizmq.ZMQOSError` that says it and keeps the errno
  (:func:`rename_oserror`).
* A listener around a bound ``trio.SocketListener`` (tcp, ipc) derives from
  :class:`SocketListenerBase`: its ``socket``, and an idempotent :meth:`aclose`.
* A byte-stream transport whose connections speak ZMTP as it is (tcp, ipc) derives
  from :class:`ZmtpStreamTransport` for its codec.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import trio

from .._errors import os_error
from .base import Codec, Endpoint, ListenerBase, SocketKind, zmtp_codec

if TYPE_CHECKING:
    from .._options import Options

__all__ = ["SocketListenerBase", "ZmtpStreamTransport", "closed_on_error", "rename_oserror"]


@contextlib.contextmanager
def closed_on_error(sock: trio.socket.SocketType, what: str | None = None) -> Iterator[None]:
    """Close ``sock`` if the block raises, and let the error go on.

    With ``what`` (``"cannot bind tcp://..."``), an ``OSError`` goes on as
    :func:`rename_oserror` makes it, chained to the original.
    """
    try:
        yield
    except BaseException as exc:
        sock.close()
        if what is not None and isinstance(exc, OSError):
            raise rename_oserror(exc, what) from exc
        raise


def rename_oserror(exc: OSError, what: str) -> OSError:
    """A new :class:`~trizmq.ZMQOSError` saying *what* failed, keeping the errno (hence
    the builtin subclass too: ``ConnectionRefusedError`` stays one).

    trio's happy-eyeballs connect raises a bare ``OSError`` without errno and hides the
    per-address errors in ``__cause__``; when they agree on one errno we surface it, so
    callers can still tell "refused" from other failures.
    """
    errno = exc.errno
    detail = exc.strerror or str(exc)
    if errno is None:
        causes = _nested_oserrors(exc.__cause__)
        errnos = {e.errno for e in causes}
        if len(errnos) == 1 and None not in errnos:
            errno = causes[0].errno
            detail = causes[0].strerror or str(causes[0])
    message = f"{what}: {detail}"
    if isinstance(exc, trio.socket.gaierror):
        return os_error(errno, message, trio.socket.gaierror)
    return os_error(errno, message)


def _nested_oserrors(exc: BaseException | None) -> Sequence[OSError]:
    if isinstance(exc, OSError):
        return [exc]
    # Duck-typed so Python 3.10 (no builtin BaseExceptionGroup) needs no backport import.
    subs = getattr(exc, "exceptions", None)
    if not isinstance(subs, tuple):
        return []
    found: list[OSError] = []
    for sub in subs:
        if isinstance(sub, BaseException):
            found.extend(_nested_oserrors(sub))
    return found


class SocketListenerBase(ListenerBase):
    """A listener around a bound, listening ``trio.SocketListener``.

    A subclass defines :meth:`accept` (what a peer's address is differs) and may
    extend :meth:`aclose` (ipc removes its socket file first).
    """

    endpoint: str

    def __init__(self, listener: trio.SocketListener, endpoint: str) -> None:
        self._listener = listener
        self.endpoint = endpoint

    @property
    def socket(self) -> trio.socket.SocketType:
        """The underlying trio socket (for options and tests)."""
        return self._listener.socket

    async def aclose(self) -> None:
        """Stop listening; safe to call more than once."""
        await self._listener.aclose()


class ZmtpStreamTransport:
    """The codec of a byte-stream transport whose connections speak ZMTP as it is
    (tcp, ipc); the subclass is the rest of a
    :class:`~trizmq.transport.base.StreamTransport`."""

    def codec(
        self, kind: SocketKind, options: Options, endpoint: Endpoint, *, client: bool
    ) -> Codec:
        """ZMTP (or a STREAM's raw bytes: see :func:`zmtp_codec`)."""
        return zmtp_codec(kind, options)
