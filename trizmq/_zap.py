"""ZAP (27/ZAP): who may connect to the server sockets of a ``trio.run``.

An :class:`Authenticator` entered with ``async with`` serves ZAP for every trizmq
socket of the current ``trio.run`` (a ``RunVar`` holds it), including sockets
opened before it: every handshake that starts while it runs consults it. Requests
and replies use RFC 27's frames (version ``1.0``, request id, domain, address,
identity, mechanism, credentials → version, request id, status code, status text,
user id, metadata) and are exchanged in-process rather than over
``inproc://zeromq.zap.01``; a custom policy overrides :meth:`Authenticator.authenticate`.

Rules:

* ``deny`` lists refused client addresses and ``allow`` the only admitted ones
  (addresses or networks, ``"10.0.0.0/8"``); both are checked before any credential.
  A client with no IP address (ipc) is refused when an ``allow`` list is given.
* PLAIN: ``passwords`` maps user names to passwords; without it every PLAIN client
  is refused. The user id is the user name.
* CURVE: ``curve_keys`` lists the admitted client public keys (Z85 or 32 raw bytes)
  and ``curve_directory`` names a directory of public certificates (``*.key``, the
  files of :mod:`trizmq.auth`, pyzmq and czmq) whose keys are admitted too, re-read
  when the directory changes; with neither, any key is admitted. The user id is the
  key in Z85.
* NULL: consulted only for sockets with a ``zap_domain``, as in libzmq; only the
  address lists apply.
* ``domain``: if given, the authenticator answers only for that ZAP domain and
  refuses the others.
* A custom policy overrides :meth:`Authenticator.authenticate`, as a plain method
  or as ``async def``. A plain override runs in a worker thread (at most
  :data:`POLICY_THREADS` at once per authenticator), so a policy that blocks (a
  database, a file) never stalls the sockets of the process; an ``async`` one runs
  in the handshake's task. Either is bounded by the handshake's ``handshake_ivl``.
* Fail closed: a policy that raises, or answers something that is not a
  ``(code, text, user id, metadata)`` reply, refuses that client with status 500
  and logs the exception with its traceback; the socket and the process go on.
* PLAIN passwords are compared in constant time (``hmac.compare_digest``), and
  an unknown user costs the same comparison, so timing tells nothing about which
  users exist.

Without an authenticator, as in libzmq 4.3, a CURVE server admits any client that
completes the handshake, and a PLAIN server refuses every client.
"""

from __future__ import annotations

import hmac
import inspect
import ipaddress
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path

import attrs
import trio

from .auth import load_certificate
from .zmtp.metadata import encode_metadata
from .zmtp.z85 import decode_key, z85_decode, z85_encode

__all__ = ["Authenticator", "ZapRequestFrames", "current_authenticator"]

log = logging.getLogger("trizmq")

_CURRENT: trio.lowlevel.RunVar[Authenticator | None] = trio.lowlevel.RunVar(
    "trizmq_authenticator", default=None
)
ZAP_VERSION = b"1.0"
#: worker threads a plain (blocking) policy override may occupy at once, per authenticator
POLICY_THREADS = 4
#: what an unknown PLAIN user's password is compared with, so that it costs the same
_NOBODY = b"\x00" * 32

#: (status code, status text, user id, metadata): what a policy answers
Verdict = tuple[str, str, bytes, dict[str, bytes]]


def current_authenticator() -> Authenticator | None:
    """The authenticator serving the current ``trio.run``, if any."""
    return _CURRENT.get()


@attrs.frozen
class ZapRequestFrames:
    """One parsed RFC 27 request."""

    request_id: bytes
    domain: str
    address: str
    identity: bytes
    mechanism: str
    credentials: tuple[bytes, ...]

    @classmethod
    def parse(cls, frames: list[bytes]) -> ZapRequestFrames:
        """Parse RFC 27 request frames (without the REQ envelope)."""
        if len(frames) < 6 or frames[0] != ZAP_VERSION:
            raise ValueError("not a ZAP 1.0 request")
        _version, request_id, domain, address, identity, mechanism, *credentials = frames
        return cls(
            request_id,
            domain.decode("utf-8", "replace"),
            address.decode("utf-8", "replace"),
            identity,
            mechanism.decode("ascii", "replace"),
            tuple(credentials),
        )


def _networks(
    entries: Iterable[str] | None, name: str
) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network] | None:
    if entries is None:
        return None
    if isinstance(entries, str):
        entries = [entries]
    networks = []
    for entry in entries:
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            raise ValueError(f"{name}: {entry!r} is not an IP address or network") from None
    return networks


def _bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


class Authenticator:
    """Serves ZAP (RFC 27) for the sockets of the current ``trio.run``.

    Entered with ``async with``, it decides who may connect to every server socket
    (PLAIN, CURVE, and NULL with a ``zap_domain``) of the ``trio.run``, sockets opened
    before it included. The address lists are checked first, then the credentials.
    A custom policy overrides :meth:`authenticate`. ``admitted`` and ``refused``
    count the requests answered.

    Args:
        passwords: PLAIN user names mapped to passwords (``bytes`` or ``str``); without
            it every PLAIN client is refused. The user id is the user name.
        curve_keys: The admitted CURVE client public keys, each 40 Z85 characters or 32
            raw bytes. With neither this nor ``curve_directory``, any key is admitted.
            The user id is the key in Z85.
        allow: The only client addresses admitted: IP addresses or networks
            (``"10.0.0.0/8"``). A client with no IP address (ipc) is then refused.
        deny: Client addresses refused: IP addresses or networks.
        domain: If given, the only ZAP domain answered; requests for others are
            refused.
        curve_directory: A directory of public certificates (``*.key``, as
            ``trizmq.auth.create_certificates`` writes) whose keys are admitted
            too, re-read when the directory changes.

    Raises:
        TypeError: If a key of ``curve_keys`` is neither ``bytes`` nor ``str``.
        ValueError: If a key of ``curve_keys`` is not 32 raw bytes or 40 valid Z85
            characters, an entry of ``allow`` or ``deny`` is not an IP address or
            network, or ``curve_directory`` is not a directory.
        RuntimeError: On entering, if another authenticator already serves this
            ``trio.run``.

    Example::

        server_public, server_secret = trizmq.curve_keypair()
        client_public, client_secret = trizmq.curve_keypair()
        async with (
            trizmq.Authenticator(curve_keys=[client_public], allow=["127.0.0.1"]),
            trizmq.Rep(security=trizmq.CurveServer(secret_key=server_secret)) as server,
        ):
            await server.bind("tcp://127.0.0.1:5555")
            ...  # only the holder of client_secret, from 127.0.0.1, gets through
    """

    def __init__(
        self,
        *,
        passwords: Mapping[bytes | str, bytes | str] | None = None,
        curve_keys: Iterable[bytes | str] | None = None,
        allow: Iterable[str] | None = None,
        deny: Iterable[str] | None = None,
        domain: str | None = None,
        curve_directory: str | os.PathLike[str] | None = None,
    ) -> None:
        self.passwords = (
            None
            if passwords is None
            else {_bytes(user): _bytes(password) for user, password in passwords.items()}
        )
        self.curve_keys = (
            None
            if curve_keys is None
            else {decode_key(key, name="curve_keys") for key in curve_keys}
        )
        self.allow = _networks(allow, "allow")
        self.deny = _networks(deny, "deny")
        self.domain = domain
        #: a directory of public certificates (``*.key``) whose keys are admitted too
        self.curve_directory = Path(curve_directory) if curve_directory is not None else None
        if self.curve_directory is not None and not self.curve_directory.is_dir():
            raise ValueError(f"curve_directory {str(curve_directory)!r} is not a directory")
        self._directory_keys: frozenset[bytes] = frozenset()
        self._directory_stamp: tuple[int, int] | None = None
        #: how many requests were admitted and refused
        self.admitted = 0
        self.refused = 0
        self._policy_threads = trio.CapacityLimiter(POLICY_THREADS)

    async def __aenter__(self) -> Authenticator:
        if _CURRENT.get() is not None:
            raise RuntimeError("an Authenticator is already serving this trio.run")
        _CURRENT.set(self)
        await trio.lowlevel.checkpoint()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if _CURRENT.get() is self:
            _CURRENT.set(None)

    async def handle(self, frames: list[bytes]) -> list[bytes]:
        """Answer one RFC 27 request (frames) with RFC 27 reply frames.

        The runtime calls this for each handshake. A malformed request is answered
        with status 500; a policy that raises or answers nonsense refuses with 500
        and is logged.

        Args:
            frames: The request: version ``1.0``, request id, domain, address,
                identity, mechanism, then the credentials (without a REQ envelope).

        Returns:
            The reply frames, namely version, request id, status code, status
            text, user id and the encoded metadata.
        """
        try:
            request = ZapRequestFrames.parse(frames)
        except ValueError:
            return [
                ZAP_VERSION,
                frames[1] if len(frames) > 1 else b"",
                b"500",
                b"bad request",
                b"",
                b"",
            ]
        code, text, user_id, metadata = await self._decide(request)
        if code == "200":
            self.admitted += 1
        else:
            self.refused += 1
            log.info(
                "ZAP refused %s client %s: %s %s", request.mechanism, request.address, code, text
            )
        await trio.lowlevel.checkpoint()
        return [
            ZAP_VERSION,
            request.request_id,
            code.encode(),
            text.encode(),
            user_id,
            encode_metadata(metadata),
        ]

    async def _decide(self, request: ZapRequestFrames) -> Verdict:
        """The policy's verdict, run where it cannot stall the process (see the module
        docstring); a policy that raises or answers nonsense refuses with 500."""
        # an override may be async, or answer anything: _checked judges the answer
        policy: Callable[[ZapRequestFrames], object] = self.authenticate
        try:
            if type(self).authenticate is Authenticator.authenticate:
                verdict = policy(request)  # the built-in rules: quick, no I/O
            elif inspect.iscoroutinefunction(policy):
                verdict = await policy(request)
            else:
                verdict = await trio.to_thread.run_sync(
                    policy, request, limiter=self._policy_threads, abandon_on_cancel=True
                )
            if isinstance(verdict, Awaitable):
                verdict = await verdict
            return _checked(verdict)
        except Exception:
            log.exception(
                "ZAP: the authenticator failed on %s client %s; refused (500)",
                request.mechanism,
                request.address,
            )
            return "500", "internal error in the authenticator", b"", {}

    def authenticate(self, request: ZapRequestFrames) -> Verdict:
        """(status code, status text, user id, metadata) for one request.

        Override freely, as a plain method (run in a worker thread) or ``async def``
        (run in the handshake's task), within the handshake's ``handshake_ivl``; a
        policy that raises, or answers something else than such a tuple, refuses the
        client with status 500 (logged), the socket unharmed. The built-in rules
        check the domain, then the address lists, then the credentials of NULL,
        PLAIN or CURVE.

        Args:
            request: The parsed request, with the attributes ``request_id``,
                ``domain``, ``address``, ``identity``, ``mechanism`` (``"NULL"``,
                ``"PLAIN"`` or ``"CURVE"``) and ``credentials`` (PLAIN: user name and
                password; CURVE: the client's 32-byte public key).

        Returns:
            The verdict ``(code, text, user_id, metadata)``, with the status code
            and text as ``str`` (``"200"`` admits; any other code refuses, ``"400"``
            for bad credentials, ``"500"`` for an error), the user id as ``bytes``,
            and the metadata as a ``dict`` of ``str`` to ``bytes``.
        """
        if self.domain is not None and request.domain != self.domain:
            return "400", "unknown domain", b"", {}
        refused = self.check_address(request.address)
        if refused:
            return "400", refused, b"", {}
        if request.mechanism == "NULL":
            return "200", "OK", b"", {}
        if request.mechanism == "PLAIN":
            if len(request.credentials) != 2:
                return "400", "bad credentials", b"", {}
            user, password = request.credentials
            expected = self.passwords.get(user) if self.passwords is not None else None
            # the same comparison whether or not the user exists: no timing oracle
            matches = hmac.compare_digest(password, _NOBODY if expected is None else expected)
            if expected is None or not matches:
                return "400", "invalid username or password", b"", {}
            return "200", "OK", user, {}
        if request.mechanism == "CURVE":
            if len(request.credentials) != 1 or len(request.credentials[0]) != 32:
                return "400", "bad credentials", b"", {}
            key = request.credentials[0]
            if not self.curve_key_admitted(key):
                return "400", "unknown public key", b"", {}
            return "200", "OK", z85_encode(key), {}
        return "500", f"unsupported mechanism {request.mechanism}", b"", {}

    def curve_key_admitted(self, key: bytes) -> bool:
        """Whether the client key (32 raw bytes) is admitted.

        Args:
            key: The client's long-term public key, 32 raw bytes.

        Returns:
            True for any key when neither ``curve_keys`` nor ``curve_directory`` is
            given, else whether one of them lists it.
        """
        if self.curve_keys is None and self.curve_directory is None:
            return True
        if self.curve_keys is not None and key in self.curve_keys:
            return True
        return self.curve_directory is not None and key in self.directory_keys()

    def directory_keys(self) -> frozenset[bytes]:
        """The keys of ``curve_directory``'s certificates, re-read when it changes.

        The directory is re-read when it changes (a certificate added, removed or
        renamed over: its modification time moves). A malformed certificate is
        logged and left out; a directory that cannot be read is logged and gives no
        keys.

        Returns:
            The public keys as 32 raw bytes each; empty without ``curve_directory``.
        """
        directory = self.curve_directory
        if directory is None:
            return frozenset()
        try:
            st = directory.stat()
        except OSError as exc:
            log.warning("ZAP: curve_directory %s cannot be read: %s", directory, exc)
            return frozenset()
        stamp = (st.st_mtime_ns, st.st_ino)
        if stamp != self._directory_stamp:
            keys = set()
            for path in sorted(directory.glob("*.key")):
                try:
                    keys.add(z85_decode(load_certificate(path)[0]))
                except (OSError, ValueError) as exc:
                    log.warning("ZAP: certificate %s left out: %s", path, exc)
            self._directory_keys = frozenset(keys)
            self._directory_stamp = stamp
        return self._directory_keys

    def check_address(self, address: str) -> str:
        """Why ``address`` is refused by the lists, or "" if it is not.

        Args:
            address: The client's IP address (``"127.0.0.1"``), or any other text
                for a client without one (ipc).

        Returns:
            ``"address denied"`` or ``"address not allowed"``, or ``""`` if the
            ``allow`` and ``deny`` lists admit it.
        """
        if self.allow is None and self.deny is None:
            return ""
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return "address not allowed" if self.allow is not None else ""
        if self.deny is not None and any(ip in net for net in self.deny):
            return "address denied"
        if self.allow is not None and not any(ip in net for net in self.allow):
            return "address not allowed"
        return ""


def _checked(verdict: object) -> Verdict:
    """A policy's answer if it has the shape of one; ``TypeError`` otherwise."""
    if (
        isinstance(verdict, tuple)
        and len(verdict) == 4
        and isinstance(verdict[0], str)
        and isinstance(verdict[1], str)
        and isinstance(verdict[2], (bytes, bytearray))
        and isinstance(verdict[3], Mapping)
    ):
        code, text, user_id, metadata = verdict
        encode_metadata(dict(metadata))  # fails here, not in the reply
        return code, text, bytes(user_id), dict(metadata)
    raise TypeError(f"authenticate() must return (code, text, user_id, metadata), not {verdict!r}")
