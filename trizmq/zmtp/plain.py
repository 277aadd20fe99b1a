"""The PLAIN security mechanism (24/ZMTP-PLAIN): a username and password in clear.

Flow, one command at a time (the server never speaks first)::

    C: HELLO username password   ->  S: (ZAP round trip)  WELCOME | ERROR
    C: INITIATE metadata         ->  S: READY metadata

Rules (RFC 24, libzmq-wire-notes §7.2):

* HELLO is ``len | username | len | password`` exactly, each at most 255 bytes;
  WELCOME is empty; INITIATE and READY carry metadata. Anything else, or any
  command out of this order, is a :class:`ProtocolError`.
* The server asks ZAP (mechanism ``PLAIN``, credentials ``[username, password]``)
  after HELLO and waits (:attr:`Mechanism.pending_zap`). 200 sends WELCOME; 400/500
  send ERROR with the status code and refuse; 300 refuses without ERROR. The
  driver answers the request; with no authenticator it must refuse.
* The server's peer metadata is the INITIATE metadata with the ZAP answer's
  ``User-Id`` and properties laid over it (:func:`zap_metadata`).
* The client is complete on READY; the server once it has sent READY.
"""

from __future__ import annotations

from collections.abc import Mapping

from .commands import HELLO, INITIATE, READY, WELCOME
from .errors import ProtocolError
from .mechanism import Command, Mechanism, ZapReply, ZapRequest, zap_metadata
from .metadata import decode_metadata, encode_metadata

__all__ = ["PlainClientMechanism", "PlainServerMechanism"]

_MAX_CREDENTIAL = 255
_HANDSHAKE = frozenset({HELLO, WELCOME, INITIATE, READY})


def _unexpected(name: bytes, state: str) -> ProtocolError:
    shown = name.decode("ascii", "replace")
    return ProtocolError(f"unexpected {shown} command {state} (PLAIN)")


def parse_hello(data: bytes) -> tuple[bytes, bytes]:
    """(username, password) of HELLO data; :class:`ProtocolError` unless exact."""
    if not data:
        raise ProtocolError("malformed PLAIN HELLO: missing username")
    user_end = 1 + data[0]
    if user_end >= len(data):
        raise ProtocolError("malformed PLAIN HELLO: truncated username or missing password")
    password_end = user_end + 1 + data[user_end]
    if password_end != len(data):
        raise ProtocolError("malformed PLAIN HELLO: password length does not match")
    return data[1:user_end], data[user_end + 1 : password_end]


class PlainClientMechanism(Mechanism):
    """The PLAIN client: sends its credentials, then its metadata."""

    name = b"PLAIN"
    handshake_commands = _HANDSHAKE

    def __init__(self, username: bytes, password: bytes) -> None:
        super().__init__(as_server=False)
        for label, value in (("username", username), ("password", password)):
            if len(value) > _MAX_CREDENTIAL:
                raise ValueError(f"PLAIN {label} is at most {_MAX_CREDENTIAL} bytes")
        self._username = bytes(username)
        self._password = bytes(password)
        self._local = b""
        self._expect = WELCOME

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        self._local = encode_metadata(local_metadata)
        hello = (
            bytes((len(self._username),))
            + self._username
            + bytes((len(self._password),))
            + self._password
        )
        return [(HELLO, hello)]

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        if name != self._expect:
            raise _unexpected(name, f"while waiting for {self._expect.decode()}")
        if name == WELCOME:
            if body:
                raise ProtocolError("malformed PLAIN WELCOME: it carries data")
            self._expect = READY
            return [(INITIATE, self._local)]
        self.peer_metadata = decode_metadata(body)
        self._expect = b""
        self.complete = True
        return []


class PlainServerMechanism(Mechanism):
    """The PLAIN server: checks the client's credentials through ZAP."""

    name = b"PLAIN"
    handshake_commands = _HANDSHAKE

    def __init__(self) -> None:
        super().__init__(as_server=True)
        self._local = b""
        self._expect = HELLO
        self._approval: ZapReply | None = None

    def start(self, local_metadata: Mapping[str, bytes]) -> list[Command]:
        self._local = encode_metadata(local_metadata)
        return []

    def on_command(self, name: bytes, body: bytes) -> list[Command]:
        if name != self._expect:
            state = f"while waiting for {self._expect.decode()}" if self._expect else "now"
            raise _unexpected(name, state)
        if name == HELLO:
            username, password = parse_hello(body)
            self._expect = b""
            self.pending_zap = ZapRequest(self.name, (username, password))
            return []
        approval = self._approval
        assert approval is not None  # INITIATE is only expected after an approval
        self.peer_metadata = zap_metadata(decode_metadata(body), approval)
        self._expect = b""
        self.complete = True
        return [(READY, self._local)]

    def on_zap_reply(self, reply: ZapReply) -> list[Command]:
        refusal = self._zap_refused(reply)
        if refusal is not None:
            return refusal
        self._approval = reply
        self._expect = INITIATE
        return [(WELCOME, b"")]
