"""The pub-sub subscription message form: ``\\x01topic`` subscribes, ``\\x00topic`` cancels.

One job: convert between a single-frame subscription message (29/PUBSUB, the
legacy ZMTP 3.0 form; libzmq wire notes section 4) and ``(subscribe, topic)``.
XPUB/PUB accept this form from any peer, XSUB applications send it, and XPUB
hands subscription events to its application in it. The ZMTP 3.1
SUBSCRIBE/CANCEL commands are the codec's business, not this module's.

Strategy: look at the first byte only; an empty frame, or one starting with any
other byte, is not a subscription. No copy of a ``bytes`` topic beyond the slice.
"""

from __future__ import annotations

__all__ = ["CANCEL", "SUBSCRIBE", "parse_subscription_message", "subscription_message"]

#: first byte of a subscribe message
SUBSCRIBE = 1
#: first byte of a cancel (unsubscribe) message
CANCEL = 0

_SUBSCRIBE_HEAD = b"\x01"
_CANCEL_HEAD = b"\x00"


def parse_subscription_message(frame: bytes | bytearray | memoryview) -> tuple[bool, bytes] | None:
    """``b"\\x01topic"`` -> ``(True, b"topic")``, ``b"\\x00topic"`` -> ``(False, b"topic")``.

    Anything else, the empty frame included, is not a subscription: None.
    """
    if not frame:
        return None
    head = frame[0]
    if head == SUBSCRIBE:
        return True, bytes(frame[1:])
    if head == CANCEL:
        return False, bytes(frame[1:])
    return None


def subscription_message(subscribe: bool, topic: bytes) -> bytes:
    """The message frame that subscribes to (or cancels) ``topic``."""
    return (_SUBSCRIBE_HEAD if subscribe else _CANCEL_HEAD) + topic
