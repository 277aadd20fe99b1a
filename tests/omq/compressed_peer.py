"""An omq.rs peer (pyomq, its sync API) that trizmq's compression tests drive.

Run by the omq interpreter (``tests/omq_python.py``: Python >= 3.12 with pyomq),
never imported by the suite. It reads one JSON command a line on stdin and answers
each with one JSON line on stdout, so one process serves a whole test; it exits at
``{"op": "quit"}``, at the end of stdin, or after ``--timeout`` seconds whatever
happens (a test that fails cannot leave it behind).

Commands (bytes travel as hex):

``{"op": "open", "name": N, "type": "PULL", "bind": EP | "connect": EP, "options": {...}}``
    a socket named N; the answer holds the endpoint bound (port 0 resolved).
    Options: ``compression_dict`` (hex), ``compression_level``,
    ``compression_auto_train`` (0/1), ``plain_server`` ("user:password", the one
    client it admits), ``plain_username``,
    ``plain_password``, ``maxmsgsize``, ``subscribe`` (a list of hex prefixes),
    ``join`` (a list of groups).
``{"op": "send", "name": N, "frames": [HEX, ...], "routing_id": R, "group": G, "repeat": K}``
    one message (``routing_id`` for a SERVER, ``group`` for a RADIO), or K of them
    at once (queued together: pyomq sends such a burst as batches). A PEER's frames
    begin with the identity of the peer they go to (as it received them), or
    ``"to_first": true`` sends them to its first connection.
``{"op": "recv", "name": N, "timeout_ms": T}``
    the next message, ``{"frames": [...], "routing_id": R, "group": G}``, or
    ``{"timeout": true}``.
``{"op": "echo", "name": N, "count": C, "timeout_ms": T}``
    receive C messages and send each back (a SERVER to its sender, a ROUTER with its
    identity frame); the answer counts them.
``{"op": "close", "name": N}``, ``{"op": "quit"}``.

Every answer is ``{"ok": true, ...}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

import pyomq

#: single-part types read and written a frame at a time; pyomq's PEER is not among
#: them: it is ROUTER-like, a message's first frame the identity pyomq gave its peer
DRAFT_SINGLE = {"CLIENT", "SERVER", "RADIO", "DISH", "SCATTER", "GATHER", "CHANNEL"}


def _endpoint(sock: Any) -> str:
    endpoint = sock.last_endpoint
    return endpoint.decode() if isinstance(endpoint, bytes) else str(endpoint)


class Peer:
    def __init__(self) -> None:
        self.context = pyomq.Context()
        self.sockets: dict[str, tuple[Any, str]] = {}

    def open(self, command: dict[str, Any]) -> dict[str, Any]:
        kind = command["type"].upper()
        sock = self.context.socket(getattr(pyomq, kind))
        sock.linger = 1000
        sock.sndhwm = 0
        sock.rcvhwm = 0
        options = command.get("options", {})
        for name in ("compression_level", "compression_auto_train", "maxmsgsize"):
            if name in options:
                setattr(sock, name, int(options[name]))
        if "compression_dict" in options:
            sock.compression_dict = bytes.fromhex(options["compression_dict"])
        if "plain_server" in options:  # "user:password", the one user it admits
            user, _, password = options["plain_server"].partition(":")
            sock.plain_server = 1
            sock.set_plain_auth([(user, password)])
        if "plain_username" in options:
            sock.plain_username = options["plain_username"].encode()
            sock.plain_password = options["plain_password"].encode()
        for prefix in options.get("subscribe", []):
            sock.subscribe(bytes.fromhex(prefix))
        for group in options.get("join", []):
            sock.join(group)
        if "bind" in command:
            sock.bind(command["bind"])
            endpoint = _endpoint(sock)
        else:
            sock.connect(command["connect"])
            endpoint = command["connect"]
        self.sockets[command["name"]] = (sock, kind)
        return {"ok": True, "endpoint": endpoint}

    def send(self, command: dict[str, Any]) -> dict[str, Any]:
        sock, kind = self.sockets[command["name"]]
        frames = [bytes.fromhex(f) for f in command["frames"]]
        if command.get("to_first"):
            # a PEER's message to its first connection, named by its identity
            deadline = time.monotonic() + 10
            while not sock.connections() and time.monotonic() < deadline:
                time.sleep(0.005)
            frames = [sock.connections()[0]["identity"], *frames]
        for _ in range(int(command.get("repeat", 1))):
            if command.get("routing_id") is not None:
                sock.send(frames[0], routing_id=int(command["routing_id"]))
            elif command.get("group") is not None:
                sock.send(frames[0], group=command["group"])
            elif kind in DRAFT_SINGLE:
                sock.send(frames[0])
            else:
                sock.send_multipart(frames)
        return {"ok": True}

    def _receive(self, sock: Any, kind: str, timeout_ms: int) -> dict[str, Any] | None:
        if not sock.poll(timeout_ms, pyomq.POLLIN):
            return None
        if kind in DRAFT_SINGLE:
            frame = sock.recv(copy=False)
            out: dict[str, Any] = {"frames": [frame.bytes.hex()]}
            if kind in ("SERVER", "PEER"):
                out["routing_id"] = frame.routing_id
            if kind == "DISH":
                out["group"] = frame.group
            return out
        return {"frames": [f.hex() for f in sock.recv_multipart()]}

    def recv(self, command: dict[str, Any]) -> dict[str, Any]:
        sock, kind = self.sockets[command["name"]]
        got = self._receive(sock, kind, int(command.get("timeout_ms", 5000)))
        return {"ok": True, "timeout": True} if got is None else {"ok": True, **got}

    def echo(self, command: dict[str, Any]) -> dict[str, Any]:
        sock, kind = self.sockets[command["name"]]
        done = 0
        for _ in range(int(command["count"])):
            got = self._receive(sock, kind, int(command.get("timeout_ms", 10_000)))
            if got is None:
                break
            self.send({"name": command["name"], **got})
            done += 1
        return {"ok": True, "count": done}

    def close(self, command: dict[str, Any]) -> dict[str, Any]:
        sock, _ = self.sockets.pop(command["name"])
        sock.close(linger=0)
        return {"ok": True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to live at most")
    args = parser.parse_args()
    # whatever happens, the process ends: a test that failed cannot leave it behind
    killer = threading.Timer(args.timeout, lambda: os._exit(3))
    killer.daemon = True
    killer.start()
    peer = Peer()
    handlers = {
        "open": peer.open,
        "send": peer.send,
        "recv": peer.recv,
        "echo": peer.echo,
        "close": peer.close,
    }
    print(json.dumps({"ok": True, "version": pyomq.__version__}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command["op"] == "quit":
            break
        try:
            answer = handlers[command["op"]](command)
        except Exception as exc:  # the test reads it and fails with it
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)
    for sock, _ in peer.sockets.values():
        sock.close(linger=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
