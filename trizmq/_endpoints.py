"""Endpoints: where a socket listens and what it connects to, while it lives.

A socket's endpoints are its runtime's (``trizmq.nursery.runtime``): these calls
parse an endpoint (``trizmq._endpoint``: the one table from scheme to transport)
and hand it on, so that a malformed one raises here, in the caller's task, before
anything is bound or connected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._docparts import shares_doc
from ._endpoint import Endpoint, parse_endpoint

if TYPE_CHECKING:
    from .nursery.runtime import SocketRuntime

__all__ = ["Endpoints"]


@shares_doc
class Endpoints:
    """The endpoint calls of a socket (a base of :class:`trizmq.Socket`; its life is
    ``SocketLife``'s, which sets what is declared here)."""

    _closing: bool
    _runtime: SocketRuntime | None

    if TYPE_CHECKING:

        def _closed_error(self) -> Exception: ...

    def _require_runtime(self) -> SocketRuntime:
        if self._closing:
            raise self._closed_error()
        if self._runtime is None:
            raise RuntimeError(
                f"enter the socket first: async with trizmq.{type(self).__name__}(...)"
            )
        return self._runtime

    async def bind(self, endpoint: str) -> str:
        """Listen on ``endpoint``; return it with a wildcard or 0 port resolved.

        Args:
            endpoint: the endpoint to listen on (``tcp://``, ``ipc://``, ``inproc://``,
                ...); a tcp port 0 lets the system pick one.

        Returns:
            The endpoint bound, with its wildcard or 0 port resolved.

        Raises:
            trizmq.EndpointError: for a malformed or unsupported endpoint, or a tcp host
                name that does not resolve.
            trizmq.ZMQOSError: when the system refuses the bind (address in use).
            {state_errors}
        """
        parsed = parse_endpoint(endpoint, for_bind=True)
        return await self._require_runtime().bind(parsed)

    async def unbind(self, endpoint: str) -> None:
        """Stop listening on an endpoint returned by ``bind()``.

        Args:
            endpoint: the endpoint as ``bind()`` returned it.

        Raises:
            trizmq.ZMQOSError: for an endpoint that is not bound (errno ``ENOENT``).
            trizmq.EndpointError: for a malformed endpoint.
            {state_errors}
        """
        await self._require_runtime().unbind(str(parse_endpoint(endpoint, for_bind=True)))

    async def connect(self, endpoint: str) -> None:
        """Connect in the background (before or after the peer binds); returns at once.

        Args:
            endpoint: the endpoint to connect to, listening or not yet.

        Raises:
            trizmq.EndpointError: for a malformed or unsupported endpoint.
            trizmq.ZMQOSError: for an endpoint already connected (errno ``EISCONN``).
            {state_errors}
        """
        parsed: Endpoint = parse_endpoint(endpoint, for_bind=False)
        await self._require_runtime().connect(parsed)

    async def disconnect(self, endpoint: str) -> None:
        """Stop connecting to ``endpoint``, dropping its queued messages.

        Args:
            endpoint: an endpoint given to ``connect()``.

        Raises:
            trizmq.ZMQOSError: for an endpoint that is not connected (errno ``ENOENT``).
            trizmq.EndpointError: for a malformed endpoint.
            {state_errors}
        """
        await self._require_runtime().disconnect(str(parse_endpoint(endpoint, for_bind=False)))
