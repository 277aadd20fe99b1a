"""The ipc:// transport: Unix-domain stream sockets (filesystem paths and Linux abstract names)."""

from __future__ import annotations

import errno
import os
import secrets
import stat
import tempfile
from typing import TYPE_CHECKING

import trio

from .._errors import EndpointError
from .addresses import check_ipc_path
from .base import DEFAULT_BACKLOG, Endpoint, Listener, effective_backlog
from .os_sockets import SocketListenerBase, ZmtpStreamTransport, closed_on_error

if TYPE_CHECKING:
    from .._options import Options

__all__ = ["IPC", "IPCListener", "IpcTransport", "connect_ipc", "fresh_ipc_path", "listen_ipc"]


def fresh_ipc_path() -> str:
    """A path in the temp directory that no one uses yet, for ``ipc://*``."""
    # 64 random bits make a collision with another process practically impossible,
    # and bind() would report one as EADDRINUSE rather than steal the path.
    return os.path.join(tempfile.gettempdir(), f"trizmq-{os.getpid()}-{secrets.token_hex(8)}.ipc")


def _sockaddr(path: str) -> str | bytes:
    if path.startswith("@"):
        # Linux abstract namespace: the kernel name starts with a NUL byte, which
        # libzmq spells "@" so that endpoints stay printable.
        return b"\x00" + path[1:].encode("utf-8", "surrogateescape")
    return path


def _unix_socket() -> trio.socket.SocketType:
    family = getattr(trio.socket, "AF_UNIX", None)
    if family is None:
        raise EndpointError("the ipc transport needs Unix-domain sockets (AF_UNIX)")
    return trio.socket.socket(family, trio.socket.SOCK_STREAM)


class IPCListener(SocketListenerBase):
    """A bound, listening Unix socket; removes its socket file on :meth:`aclose`."""

    def __init__(
        self,
        listener: trio.SocketListener,
        endpoint: str,
        owned_file: tuple[str, int, int] | None,
    ) -> None:
        super().__init__(listener, endpoint)
        # (absolute path, st_dev, st_ino) of the socket file we created, or None for
        # abstract names, which vanish with the socket.
        self._owned_file = owned_file

    async def accept(self) -> tuple[trio.SocketStream, str]:
        """Wait for a peer; return its stream and ``""`` (Unix peers have no address)."""
        return await self._listener.accept(), ""

    async def aclose(self) -> None:
        """Stop listening and remove the socket file; safe to call more than once."""
        owned, self._owned_file = self._owned_file, None
        if owned is not None:
            path, dev, ino = owned
            # Another process may have replaced the file (e.g. treated ours as stale and
            # bound anew); deleting theirs would make them unreachable.
            try:
                st = os.lstat(path)
                if (st.st_dev, st.st_ino) == (dev, ino):
                    os.unlink(path)
            except OSError:
                pass
        await super().aclose()


async def listen_ipc(endpoint: Endpoint, *, backlog: int = DEFAULT_BACKLOG) -> IPCListener:
    """Bind and listen on *endpoint* (``ipc://path``, ``ipc://@name`` or ``ipc://*``).

    A leftover socket file nobody listens on is replaced; a live listener or a
    non-socket file at the path makes this raise ``OSError`` (EADDRINUSE).
    """
    if endpoint.transport != "ipc" or endpoint.path is None:
        raise EndpointError(f"endpoint {str(endpoint)!r} is not an ipc endpoint")
    path = fresh_ipc_path() if endpoint.path == "*" else endpoint.path
    name = f"ipc://{path}"
    abstract = path.startswith("@")

    sock = _unix_socket()
    with closed_on_error(sock, f"cannot bind {name}"):
        try:
            await sock.bind(_sockaddr(path))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or abstract:
                raise
            await _remove_stale_socket_file(path, name)
            await sock.bind(_sockaddr(path))
        sock.listen(backlog)
        owned: tuple[str, int, int] | None = None
        if not abstract:
            # Remember the absolute path: a later chdir must not make aclose() look
            # at (and maybe delete) some other file.
            st = os.lstat(path)
            owned = (os.path.abspath(path), st.st_dev, st.st_ino)
    return IPCListener(trio.SocketListener(sock), name, owned)


async def _remove_stale_socket_file(path: str, name: str) -> None:
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(before.st_mode):
        raise OSError(
            errno.EADDRINUSE,
            f"{path!r} exists and is not a socket; refusing to replace it",
        )
    probe = _unix_socket()
    try:
        await probe.connect(path)
    except (ConnectionRefusedError, FileNotFoundError):
        pass  # no one listens: the file is a leftover of a process that died
    else:
        raise OSError(errno.EADDRINUSE, "address already in use by a live listener")
    finally:
        probe.close()
    try:
        after = os.lstat(path)
    except FileNotFoundError:
        return
    if (after.st_dev, after.st_ino) == (before.st_dev, before.st_ino):
        os.unlink(path)


async def connect_ipc(endpoint: Endpoint) -> trio.SocketStream:
    """Connect to *endpoint*; a missing or dead listener is ``OSError``."""
    if endpoint.transport != "ipc" or endpoint.path is None or endpoint.path == "*":
        raise EndpointError(f"endpoint {str(endpoint)!r} is not a connectable ipc endpoint")
    sock = _unix_socket()
    with closed_on_error(sock, f"cannot connect to {endpoint}"):
        await sock.connect(_sockaddr(endpoint.path))
    return trio.SocketStream(sock)


class IpcTransport(ZmtpStreamTransport):
    """``ipc://path``, ``ipc://@name`` (Linux abstract) and ``ipc://*`` on bind; ZMTP."""

    scheme = "ipc"

    def parse(self, text: str, address: str, *, for_bind: bool) -> Endpoint:
        """A path that fits a Unix socket address."""
        path = check_ipc_path(text, address, for_bind=for_bind)
        return Endpoint(self.scheme, address, path=path)

    async def listen(self, endpoint: Endpoint, options: Options) -> Listener:
        """Bind and listen (see :func:`listen_ipc`)."""
        return await listen_ipc(endpoint, backlog=effective_backlog(options.backlog))

    async def connect(self, endpoint: Endpoint, options: Options) -> trio.abc.Stream:
        """Connect (see :func:`connect_ipc`)."""
        return await connect_ipc(endpoint)

    def abort(self, stream: trio.abc.Stream) -> None:
        """Nothing: a Unix socket leaves no TIME_WAIT behind."""


#: the ipc transport of the table
IPC = IpcTransport()
