"""Handshake slots: the slow-loris defence of a bound socket.

At most ``max_handshakes`` accepted connections are in their handshake at once,
and each must deliver its greeting and first handshake command within
``greeting_ivl`` of its accept (a deadline, not an idle timer: trickling bytes
does not extend it), and its whole handshake within ``handshake_ivl``.

Rules:

* When every slot is taken, a newcomer first lets the accepted handshakes run
  once, then evicts the oldest evictable handshake of the peer address holding the
  most slots (:meth:`HandshakeSlots.evict`) and waits for that connection to
  close; only a handshake at least :data:`EVICTION_GRACE` old (``greeting_ivl`` if
  shorter) may be evicted, and while none is, the newcomer waits for a free slot
  (in the kernel's backlog, which the ``backlog`` option sizes). A flood thus costs
  at most ``max_handshakes`` connections (memory and file descriptors), an
  attacker's connections evict each other before anyone else's, a newcomer gets a
  slot within the grace, and a burst of well-behaved peers (a thousand connecting
  at once) is not cut: each greets at once and finishes well within the grace.
  Without the grace a newcomer could evict a handshake accepted a moment before,
  whose peer had already written its greeting and first message: that message
  was lost with the connection.
* Addresses are grouped for eviction (:func:`address_group`): an IPv4 address, an
  IPv6 /64 (what one IPv6 host usually holds), or the address text.
* Choosing the connection that made the least progress instead could be gamed:
  an attacker's connections that send their greeting and stall would outrank a
  fresh client that has not spoken yet.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import logging
import math
from collections.abc import Iterator
from typing import TYPE_CHECKING

import trio

if TYPE_CHECKING:
    from .._options import Options
    from ..transport.base import Codec

__all__ = [
    "EVICTION_GRACE",
    "EVICTION_REPORT_EVERY",
    "HandshakeSlot",
    "HandshakeSlots",
    "address_group",
]

log = logging.getLogger("trizmq")

#: under a flood, the WARNING about evicted handshakes comes at most this often (seconds)
EVICTION_REPORT_EVERY = 10.0
#: a handshake younger than this (seconds) is never evicted (``greeting_ivl`` if shorter):
#: a well-behaved peer's greeting is on its way; under a flood, the slots still turn
#: over max_handshakes / EVICTION_GRACE times a second
EVICTION_GRACE = 0.1


class _HandshakeCut(Exception):
    """An accepted connection's handshake ended by its slot: evicted, or too slow to greet.

    Private: the connection actor catches it and logs it at :attr:`level`; it never
    reaches the application.
    """

    def __init__(self, reason: str, level: int, cause: str) -> None:
        super().__init__(reason)
        #: the logging level of the line that reports it
        self.level = level
        #: the handshake failure's cause, as the socket counts it (``sock.stats()``)
        self.cause = cause


def address_group(address: str) -> str:
    """What eviction counts a peer's handshakes by: its IPv4 address, the /64 network
    of its IPv6 address (what one IPv6 host usually holds), or else the address text
    without its port (``""`` for ipc, whose peers have no address)."""
    host = address.rpartition(":")[0].strip("[]")
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip.exploded}/64", strict=False))
    return host


class HandshakeSlot:
    """One accepted connection's place among the ``max_handshakes``, from its accept to
    the end of its handshake.

    :attr:`scope` surrounds the handshake: the acceptor cancels it to evict the
    connection, and its deadline is the greeting deadline (``greeting_ivl`` after the
    accept) until the peer's greeting and first handshake command have arrived.
    """

    __slots__ = ("accepted_at", "evicted", "greeted", "group", "held", "order", "scope")

    def __init__(self, group: str, order: int, greeting_deadline: float) -> None:
        #: the peer's :func:`address_group`
        self.group = group
        #: accept order: the smallest is the oldest
        self.order = order
        #: when it was accepted (trio's clock)
        self.accepted_at = trio.current_time()
        self.scope = trio.CancelScope(deadline=greeting_deadline)
        #: the greeting and first command arrived: the greeting deadline is lifted
        self.greeted = False
        #: chosen by :meth:`HandshakeSlots.evict`
        self.evicted = False
        #: the slot is still counted
        self.held = True

    def note_progress(self, codec: Codec) -> None:
        """Lift the greeting deadline once the codec has the greeting and a command."""
        if codec.handshake_commands_received or codec.handshake_complete:
            self.greeted = True
            self.scope.deadline = math.inf


class HandshakeSlots:
    """The handshake slots of one socket (all its bound endpoints share them)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self._free = trio.Semaphore(options.max_handshakes)
        #: address group -> its accepted connections in their handshake, oldest first
        #: (those evicted already are gone from here, though their slot is held until
        #: they have closed)
        self.handshaking: dict[str, dict[HandshakeSlot, None]] = {}
        #: handshakes evicted to admit newer connections
        self.evicted = 0
        self._unreported = 0
        self._reported_at = -math.inf
        self._order = itertools.count()

    async def admit(self, endpoint: str, address: str) -> HandshakeSlot:
        """A slot for a connection just accepted from ``address``: a free one, or one
        freed by evicting a handshake old enough (waiting for it to close), or the
        first to free up while none is old enough."""
        try:
            self._free.acquire_nowait()
        except trio.WouldBlock:
            # let the handshakes already accepted read what their peers sent (a burst
            # of well-behaved peers finishes them now) before cutting one
            await trio.lowlevel.checkpoint()
            if self._free.value:
                self._free.acquire_nowait()
                return self.take(address)
            while True:
                wait = self.evict(endpoint)
                if wait is None:
                    # the victim lets go of its slot as soon as it has closed
                    await self._free.acquire()
                    break
                with trio.move_on_after(wait):
                    await self._free.acquire()
                    break
        return self.take(address)

    def take(self, address: str) -> HandshakeSlot:
        """Record a connection just accepted (its unit of the semaphore acquired)."""
        greeting_ivl = self.options.greeting_ivl
        handshake_ivl = self.options.handshake_ivl
        deadline = math.inf
        if greeting_ivl is not None and (handshake_ivl is None or greeting_ivl < handshake_ivl):
            deadline = trio.current_time() + greeting_ivl
        slot = HandshakeSlot(address_group(address), next(self._order), deadline)
        self.handshaking.setdefault(slot.group, {})[slot] = None
        return slot

    def _forget(self, slot: HandshakeSlot) -> None:
        group = self.handshaking.get(slot.group)
        if group is not None:
            group.pop(slot, None)
            if not group:
                del self.handshaking[slot.group]

    def release(self, slot: HandshakeSlot) -> None:
        """The connection's handshake is over (or it is closed): free its slot; idempotent."""
        if slot.held:
            slot.held = False
            self._forget(slot)
            self._free.release()

    def grace(self) -> float:
        """How old a handshake must be before it may be evicted."""
        greeting_ivl = self.options.greeting_ivl
        return EVICTION_GRACE if greeting_ivl is None else min(EVICTION_GRACE, greeting_ivl)

    def evict(self, endpoint: str) -> float | None:
        """Every slot is taken: cut the oldest handshake of the address group that holds
        the most slots (ties: the oldest such handshake), among the handshakes at
        least :meth:`grace` old. Returns None when it cut one (or only connections
        evicted already, closing, hold slots), else the seconds until one is old
        enough. See the module docstring."""
        victim: HandshakeSlot | None = None
        most = 0
        old_enough = trio.current_time() - self.grace()
        wait = math.inf
        for slots in self.handshaking.values():
            candidate = None
            for slot in slots:  # oldest first: the first is the group's candidate
                if slot.accepted_at <= old_enough:
                    candidate = slot
                else:
                    wait = min(wait, slot.accepted_at - old_enough)
                break
            if candidate is None:
                continue
            if len(slots) > most or (
                len(slots) == most and victim is not None and candidate.order < victim.order
            ):
                victim, most = candidate, len(slots)
        if victim is None:
            # every handshake is younger than the grace: wait for one to end or age
            return None if wait == math.inf else max(wait, 0.0)
        self._forget(victim)
        victim.evicted = True
        victim.scope.cancel()
        self.evicted += 1
        self._unreported += 1
        now = trio.current_time()
        if now - self._reported_at >= EVICTION_REPORT_EVERY:
            log.warning(
                "%s: all %d handshake slots taken (max_handshakes): evicted %d handshake(s) "
                "to admit newer connections",
                endpoint,
                self.options.max_handshakes,
                self._unreported,
            )
            self._unreported = 0
            self._reported_at = now
        return None

    @contextlib.contextmanager
    def guard(self, slot: HandshakeSlot | None) -> Iterator[None]:
        """Run a handshake inside its slot's scope: an eviction or a greeting that came
        too late ends it with :class:`_HandshakeCut`."""
        if slot is None:
            yield
            return
        with slot.scope:
            yield
        if slot.scope.cancelled_caught:
            if slot.evicted:
                raise _HandshakeCut(
                    "evicted: every handshake slot was taken (max_handshakes) "
                    "and a newer connection arrived",
                    logging.DEBUG,
                    "evicted",
                )
            raise _HandshakeCut(
                f"greeting timed out after {self.options.greeting_ivl}s",
                logging.WARNING,
                "timeout",
            )
