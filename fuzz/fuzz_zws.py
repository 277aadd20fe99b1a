"""Fuzz the ZWS codec: bytes from libFuzzer, fed to a ZwsConnection, whole and in pieces.

Run: ``python fuzz/fuzz_zws.py -runs=100000`` (any libFuzzer flag works).

The input chooses a side (a client reads a server's unmasked frames, a server a
client's masked ones) and a state: fresh (the input after a valid upgrade request or
response, or instead of one), or past the upgrade and the ZMTP handshake (NULL, a
PLAIN server waiting for its HELLO, a PUB with ``max_subscription``, ZWS2.0 with no
mechanism). The rest of the input is either the raw bytes or payloads that are put
into well-formed frames (random opcodes, FIN bits and lengths, masked as the side
expects), so that the ZWS mapping behind the frame codec is reached as well; then
where the bytes are cut. Invariants, as ``fuzz/fuzz_decoder.py``'s: the only
exceptions ever raised are :class:`ProtocolError` and, after a normal CLOSE, the
connection's end (a ``ConnectionResetError``); delivering the bytes in pieces gives
the same events as delivering them at once (or both fail; a PUB's subscription or
cancel over its bound counts the same refused in the codec or handed on whole). A
pending ZAP request is answered with 200 at once. Anything else is a crash libFuzzer
reports with its input.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with atheris.instrument_imports(include=["trizmq.zmtp"]):
    from trizmq.patterns.sockets import socket_type as row_of
    from trizmq.zmtp import (
        Cancel,
        Connection,
        PlainServerMechanism,
        ProtocolError,
        Received,
        Subscribe,
        SubscriptionRefused,
        ZapReply,
    )
    from trizmq.zmtp.rfc6455 import FrameEncoder
    from trizmq.zmtp.zws import ZwsConnection

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, Request

ACCEPT = ZapReply("200", "OK", b"fuzz")
READY_PUSH = b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x04PUSH"
READY_SUB = b"\x02\x05READY\x0bSocket-Type\x00\x00\x00\x03SUB"
#: the PUB's bound on a topic
MAX_SUBSCRIPTION = 40


def _server(socket_type: str = "PULL", **kw: object) -> ZwsConnection:
    inner = Connection(socket_type, **row_of(socket_type).handshake_facts(), **kw)  # type: ignore[arg-type]
    conn = ZwsConnection(inner, client=False, host="h:1", path="/zmq")
    conn.start()
    return conn


def _client(socket_type: str = "PUSH") -> ZwsConnection:
    inner = Connection(socket_type, **row_of(socket_type).handshake_facts(), identity=b"me")
    return ZwsConnection(inner, client=True, host="h:1", path="/zmq")


def _request(protocols: list[str]) -> bytes:
    return WSConnection(ConnectionType.CLIENT).send(
        Request(host="h:1", target="/zmq", subprotocols=protocols)
    )


def _response_to(client: ZwsConnection, protocol: str) -> bytes:
    server = WSConnection(ConnectionType.SERVER)
    server.receive_data(client.start())
    list(server.events())
    return server.send(AcceptConnection(subprotocol=protocol))


def _open(conn: ZwsConnection, first: bytes, peer_messages: list[bytes]) -> ZwsConnection:
    """``conn`` past the upgrade (``first`` is the peer's request or response) and the
    ZMTP handshake, the peer's ``peer_messages`` framed as the peer would frame them."""
    peer = FrameEncoder(client=not conn._client)
    wire = bytearray(first)
    for message in peer_messages:
        peer.binary_into(wire, message[:1], message[1:])
    conn.receive_data(bytes(wire))
    conn.data_to_send()
    return conn


def _null_server() -> tuple[ZwsConnection, bytes]:
    return _server(), _request(["ZWS2.0/NULL"])


def _plain_server() -> tuple[ZwsConnection, bytes]:
    return _server(mechanism=PlainServerMechanism()), _request(["ZWS2.0/PLAIN"])


def _null_client() -> tuple[ZwsConnection, bytes]:
    client = _client()
    return client, _response_to(client, "ZWS2.0/NULL")  # its request went out


def _opened(
    make: Callable[[], tuple[ZwsConnection, bytes]], peer_messages: list[bytes]
) -> Callable[[], tuple[ZwsConnection, bytes]]:
    def opened() -> tuple[ZwsConnection, bytes]:
        conn, upgrade = make()
        return _open(conn, upgrade, peer_messages), b""

    return opened


#: makers of a connection before the upgrade, and of a valid upgrade that may go
#: before the input (a client's response answers its own request's key); then of
#: connections past the upgrade (a connection holds generators: made anew each time)
MAKERS: list[tuple[Callable[[], tuple[ZwsConnection, bytes]], bool]] = [
    (_null_server, True),
    (_plain_server, True),
    (_null_client, True),
    (_opened(_null_server, [READY_PUSH]), False),
    (_opened(_null_client, [b"\x02\x05READY"]), False),
    (
        _opened(
            lambda: (_server("PUB", max_subscription=MAX_SUBSCRIPTION), _request(["ZWS2.0/NULL"])),
            [READY_SUB],
        ),
        False,
    ),
    (
        _opened(lambda: (_server("ROUTER"), _request(["ZWS2.0"])), [b"\x00browser"]),
        False,
    ),
    (_opened(_plain_server, []), False),
]


def _framed(fdp: atheris.FuzzedDataProvider, client: bool) -> bytes:
    """Payloads from the input in well-formed frames, as the peer of ``client`` writes."""
    peer = FrameEncoder(client=not client)
    out = bytearray()
    for _ in range(fdp.ConsumeIntInRange(0, 12)):
        opcode = fdp.PickValueInList([0x0, 0x1, 0x2, 0x2, 0x2, 0x8, 0x9, 0xA])
        fin = opcode > 0x2 or fdp.ConsumeBool()
        payload = fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 300))
        if opcode > 0x2:
            payload = payload[:125]
        if opcode == 0x2 and fin and fdp.ConsumeBool():
            payload = b"\x00" + payload  # a ZWS last frame, the commonest
        out += peer.frame(opcode, payload, fin)
    return bytes(out)


def _run(conn: ZwsConnection, pieces: list[bytes]) -> tuple[list[Received], str]:
    events: list[Received] = []
    try:
        for piece in pieces:
            events += conn.receive_data(piece)
            if conn.closed:  # the peer sent ERROR or CLOSE: a driver stops reading here
                break
            while conn.pending_zap is not None:
                events += conn.zap_reply(ACCEPT)
    except ProtocolError:
        return events, "failed"
    except ConnectionResetError:
        return events, "ended"
    return events, "ended" if conn._peer_closed is not None else "open"


def _meaning(events: list[Received]) -> list[Received]:
    """``events`` as the publisher takes them. A subscription or cancel over the bound
    is dropped by the codec once its frame spans reads, and handed on when the frame
    is whole in one (the publisher refuses it then): how the bytes were cut decides
    which, so both are made the same here, a refusal or nothing."""
    out: list[Received] = []
    for event in events:
        cls = event.__class__
        if cls is list and len(event) == 1 and event[0][:1] in (b"\x00", b"\x01"):  # type: ignore[arg-type, index]
            topic = event[0][1:]  # type: ignore[index]
            if len(topic) > MAX_SUBSCRIPTION:
                if event[0][:1] == b"\x01":  # type: ignore[index]
                    out.append(SubscriptionRefused(len(topic)))
                continue
        elif cls is Subscribe and len(event.topic) > MAX_SUBSCRIPTION:  # type: ignore[union-attr]
            out.append(SubscriptionRefused(len(event.topic)))  # type: ignore[union-attr]
            continue
        elif cls is Cancel and len(event.topic) > MAX_SUBSCRIPTION:  # type: ignore[union-attr]
            continue
        out.append(event)
    return out


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in itertools.pairwise([0, *points, len(data)])]


def test_one_input(raw: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(raw)
    choice = fdp.ConsumeIntInRange(0, len(MAKERS) - 1)
    framed = fdp.ConsumeBool()
    cuts = [fdp.ConsumeIntInRange(0, 1 << 16) for _ in range(fdp.ConsumeIntInRange(0, 8))]
    maker, fresh = MAKERS[choice]
    # two connections alike, the second's upgrade (if any) its own
    first, upgrade = maker()
    second, upgrade_again = maker()
    upgraded = fresh and fdp.ConsumeBool()
    body = _framed(fdp, first._client) if framed else fdp.ConsumeBytes(fdp.remaining_bytes())
    whole = (upgrade if upgraded else b"") + body
    split = (upgrade_again if upgraded else b"") + body
    whole_events, whole_outcome = _run(first, [whole])
    split_events, split_outcome = _run(second, _split(split, cuts))
    if whole_outcome != split_outcome or (
        whole_outcome != "failed" and _meaning(whole_events) != _meaning(split_events)
    ):
        raise AssertionError(
            f"split changed the outcome: whole={whole_events!r} ({whole_outcome}) "
            f"split={split_events!r} ({split_outcome})"
        )


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
