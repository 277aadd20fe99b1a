"""The NULL security mechanism: one READY each way, no authentication.

Rules (23/ZMTP §NULL, libzmq-wire-notes §2.1):

* READY goes out as soon as the greeting is done, carrying our metadata in the
  order the Connection built (Socket-Type, Identity for REQ/DEALER/ROUTER, ``X-``
  properties). Neither side waits for the other.
* Exactly one READY is accepted; its metadata must parse exactly. Any other
  handshake command is a protocol error (ERROR is handled by the Connection).
* The handshake is complete once one READY was sent and one received.
"""

from __future__ import annotations

from collections.abc import Mapping

from .commands import READY
from .errors import ProtocolError
from .mechanism import Command, Mechanism
from .metadata import decode_metadata, encode_metadata

__all__ = ["NullMechanism"]


class NullMechanism(Mechanism):
    """NULL: clear text, no credentials; the as-server byte is always 0."""

    name = b"NULL"
    handshake_commands = frozenset({READY})

    def __init__(self) -> None:
        super().__init__(as_server=False)
        self._sent = False
        self._received = False

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        self._sent = True
        self.complete = self._received
        return [(READY, encode_metadata(local_metadata))]

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        if name != READY:
            shown = name.decode("ascii", "replace")
            raise ProtocolError(f"unexpected {shown} command during the NULL handshake")
        if self._received:
            raise ProtocolError("second READY command")
        self.peer_metadata = decode_metadata(body)
        self._received = True
        self.complete = self._sent
        return []
