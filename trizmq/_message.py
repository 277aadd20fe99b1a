"""A received message with its metadata (``Socket.recv_message``)."""

from __future__ import annotations

import attrs

__all__ = ["Message"]


@attrs.frozen(slots=True)
class Message:
    """A whole message: its frames, and the group or routing id where the type has one."""

    frames: list[bytes]
    group: bytes | None = None
    routing_id: int | None = None

    @property
    def data(self) -> bytes:
        """The only frame; ``ValueError`` for a multipart message."""
        if len(self.frames) != 1:
            raise ValueError(f"message has {len(self.frames)} frames, not 1; use .frames")
        return self.frames[0]
