"""A received message with its metadata (``Socket.recv_message``)."""

from __future__ import annotations

import attrs

__all__ = ["Message"]


@attrs.frozen(slots=True)
class Message:
    """A whole message: its frames, and the group or routing id where the type has one.

    What :meth:`trizmq.Socket.recv_message` returns; frozen.

    Args:
        frames: the frames of the message.
        group: the group it was sent to, on a DISH; None elsewhere.
        routing_id: the routing id of the peer it came from, on a SERVER or PEER;
            None elsewhere.
    """

    frames: list[bytes]
    group: bytes | None = None
    routing_id: int | None = None

    @property
    def data(self) -> bytes:
        """The only frame; ``ValueError`` for a multipart message.

        Raises:
            ValueError: if the message has more than one frame (or none).
        """
        if len(self.frames) != 1:
            raise ValueError(f"message has {len(self.frames)} frames, not 1; use .frames")
        return self.frames[0]
