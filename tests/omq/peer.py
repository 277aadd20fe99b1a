"""A small generic omq.rs peer (pyomq, sync API) for trizmq's interop tests.

Run by the omq interpreter (``tests/omq_python.py``), never imported by the suite:
pyomq needs Python >= 3.12. It mirrors ``tests/node/peer.js`` (the libzmq peer) in
its options and its output, so ``tests/interop/omq_peer.py`` reads it as
``tests/interop/node_peer.py`` reads that one. It always exits by itself:
``--timeout`` bounds the run.

Usage (options marked * may repeat):
  python tests/omq/peer.py --type TYPE (--bind EP | --connect EP)* [--join GROUP]*
       [--send N [--group G] [--body B | --body-hex HEX | --messages-hex M;M..]
        [--interval MS] [--forever] [--routing-id ID]]
       [--recv N [--recv-first]] [--echo N] [--request N] [--timeout MS]
       [--after MS] [--stay] [--monitor]
       [--subscribe PREFIX]* [--plain-server USER:PASSWORD | --plain-user U
        --plain-password P] [--curve-secret Z85 --curve-public Z85
        [--curve-server-key Z85 | --curve-allow Z85*]] [--identity ID]
       [--heartbeat IVL_MS,TIMEOUT_MS[,TTL_MS]] [--maxmsgsize N]

TYPE: pair pub sub xpub xsub push pull req rep dealer router (stable), client server
      radio dish scatter gather channel peer (draft).
Output on stdout, one JSON object a line:
  {"ready": ["tcp://127.0.0.1:40123", ...]}  after every bind/connect is done
  {"body": HEX, "group": G, "routing_id": N}   per received one-frame message (group
      on dish only, routing_id on server only); {"frames": [HEX, ...]} for a
      multipart one (a ROUTER's and a PEER's have the sender's identity first)
  {"event": NAME, ...}                         a monitor event, with --monitor
  {"done": true}                               before a clean exit (code 0)
A body may contain "{i}", replaced by the message's index (0-based). --messages-hex
  gives the messages to send instead, ";" between messages and "," between the
  frames of one, in hex; the i-th send sends message i (modulo their number).
--send N: send N messages, --interval MS apart (default 20; a PEER's go to its first
  connection, once it has one); with --forever keep sending until the timeout, which
  then counts as success (a --recv alongside still runs, between the sends).
--recv N: print N received messages. With both --send and --recv the sending runs
  first (a client's request/reply) unless --forever or --recv-first is given (an
  XPUB that waits for its subscription before it publishes).
--echo N: receive N messages and send each back (server: to its sender).
--request N: N times, send a message and print the reply (REQ's lockstep).
--after MS: wait this long after the last send before exiting (default 100).
--stay: print {"done": true}, then exit (0) only when stdin closes, so a caller that
  has read what it expects lets the peer go (no flush race).
--subscribe: a SUB's or XSUB's prefixes (default for SUB: everything; an XSUB without
  one subscribes to nothing). --plain-server U:P makes the socket a PLAIN server that
  admits that one user; --curve-secret/--curve-public make it a CURVE server (any
  client key, or only the --curve-allow keys), or with --curve-server-key a client.
--heartbeat: ZMQ_HEARTBEAT_IVL, _TIMEOUT and (optionally) _TTL, milliseconds.
--monitor: print the socket's monitor events (handshake_succeeded, disconnected, ...).
Exit codes: 0 done, 2 bad arguments, 3 timeout, 1 any other error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

import pyomq as zmq

TYPES = {
    "pair": zmq.PAIR,
    "pub": zmq.PUB,
    "sub": zmq.SUB,
    "xpub": zmq.XPUB,
    "xsub": zmq.XSUB,
    "push": zmq.PUSH,
    "pull": zmq.PULL,
    "req": zmq.REQ,
    "rep": zmq.REP,
    "dealer": zmq.DEALER,
    "router": zmq.ROUTER,
    "client": zmq.CLIENT,
    "server": zmq.SERVER,
    "radio": zmq.RADIO,
    "dish": zmq.DISH,
    "scatter": zmq.SCATTER,
    "gather": zmq.GATHER,
    "channel": zmq.CHANNEL,
    "peer": zmq.PEER,
}
#: the types whose received messages carry the sender's routing id (pyomq's PEER is
#: ROUTER-like instead: the sender's identity is a message's first frame, and a
#: message sent names its peer the same way)
ROUTED = {"server"}

_print_lock = threading.Lock()


class Usage(Exception):
    """A bad command line (exit code 2)."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # exit 2 with our prefix, as peer.js does
        raise Usage(message)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = Parser(prog="peer.py", add_help=False)
    parser.add_argument("--type", required=True, choices=sorted(TYPES))
    parser.add_argument("--bind", action="append", default=[])
    parser.add_argument("--connect", action="append", default=[])
    parser.add_argument("--join", action="append", default=[])
    parser.add_argument("--subscribe", action="append", default=[])
    parser.add_argument("--send", type=int, default=0)
    parser.add_argument("--recv", type=int, default=0)
    parser.add_argument("--echo", type=int, default=0)
    parser.add_argument("--request", type=int, default=0)
    parser.add_argument("--recv-first", action="store_true")
    parser.add_argument("--group", default="")
    parser.add_argument("--body", default="msg {i}")
    parser.add_argument("--body-hex")
    parser.add_argument("--messages-hex")
    parser.add_argument("--interval", type=float, default=20)
    parser.add_argument("--forever", action="store_true")
    parser.add_argument("--routing-id", type=int)
    parser.add_argument("--timeout", type=float, default=10000)
    parser.add_argument("--after", type=float, default=100)
    parser.add_argument("--stay", action="store_true")
    parser.add_argument("--monitor", action="store_true")
    parser.add_argument("--plain-server")
    parser.add_argument("--plain-user")
    parser.add_argument("--plain-password", default="")
    parser.add_argument("--curve-secret")
    parser.add_argument("--curve-public")
    parser.add_argument("--curve-server-key")
    parser.add_argument("--curve-allow", action="append", default=[])
    parser.add_argument("--identity")
    parser.add_argument("--heartbeat")
    parser.add_argument("--maxmsgsize", type=int)
    args = parser.parse_args(argv)
    if not args.bind and not args.connect:
        raise Usage("give --bind or --connect")
    return args


def out(obj: dict[str, Any]) -> None:
    with _print_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def configure(sock: Any, args: argparse.Namespace) -> None:
    """Every option before the first bind/connect, as pyomq requires for security."""
    sock.linger = 1000
    if args.identity is not None:
        sock.routing_id = args.identity.encode()
    if args.maxmsgsize is not None:
        sock.maxmsgsize = args.maxmsgsize
    if args.heartbeat is not None:
        values = [int(v) for v in args.heartbeat.split(",")]
        sock.heartbeat_ivl = values[0]
        sock.heartbeat_timeout = values[1]
        if len(values) > 2:
            sock.heartbeat_ttl = values[2]
    if args.plain_server is not None:
        user, _, password = args.plain_server.partition(":")
        sock.plain_server = 1
        sock.set_plain_auth([(user, password)])
    if args.plain_user is not None:
        sock.plain_username = args.plain_user.encode()
        sock.plain_password = args.plain_password.encode()
    if args.curve_secret is not None:
        sock.curve_secretkey = args.curve_secret.encode()
        sock.curve_publickey = args.curve_public.encode()
        if args.curve_server_key is not None:
            sock.curve_serverkey = args.curve_server_key.encode()
        else:
            sock.curve_server = 1
            sock.set_curve_auth([key.encode() for key in args.curve_allow] or None)


def watch(monitor: Any) -> None:
    """Print every monitor event until the socket closes (a daemon thread)."""
    while True:
        try:
            event = monitor.recv(1000)
        except zmq.Again:
            continue
        except Exception:
            return
        shown = {k: (v.hex() if isinstance(v, bytes) else v) for k, v in event.items()}
        out(shown)
        if event.get("event") == "closed":
            return


def report(args: argparse.Namespace, frames: list[Any]) -> list[Any]:
    """Print one received message; returns its frames (pyomq ``Frame`` objects)."""
    first = frames[0]
    if args.type == "dish":
        out({"group": first.group, "body": first.bytes.hex()})
    elif args.type in ROUTED:
        out({"routing_id": first.routing_id, "body": first.bytes.hex()})
    elif len(frames) == 1:
        out({"body": first.bytes.hex()})
    else:
        out({"frames": [frame.bytes.hex() for frame in frames]})
    return frames


def receive(sock: Any, args: argparse.Namespace, flags: int = 0) -> list[Any]:
    return report(args, sock.recv_multipart(flags, copy=False))


def payload(args: argparse.Namespace, i: int) -> list[bytes]:
    if args.messages_hex is not None:
        messages = args.messages_hex.split(";")
        return [bytes.fromhex(part) for part in messages[i % len(messages)].split(",")]
    if args.body_hex is not None:
        return [bytes.fromhex(args.body_hex)]
    return [args.body.replace("{i}", str(i)).encode()]


def send_one(sock: Any, args: argparse.Namespace, i: int) -> None:
    frames = payload(args, i)
    if args.type == "radio":
        sock.send(frames[0], group=args.group)
    elif args.type in ROUTED:
        sock.send(frames[0], routing_id=args.routing_id)
    elif args.type == "peer":
        # to the first peer connected: pyomq names it by the identity it gave it
        while not sock.connections():
            time.sleep(0.005)
        sock.send_multipart([sock.connections()[0]["identity"], *frames])
    else:
        sock.send_multipart(frames)


def echo(sock: Any, args: argparse.Namespace) -> None:
    frames = receive(sock, args)
    if args.type in ROUTED:
        sock.send(frames[0].bytes, routing_id=frames[0].routing_id)
    else:
        sock.send_multipart([frame.bytes for frame in frames])


def wait_for_stdin_close() -> None:
    while sys.stdin.buffer.read(65536):
        pass


def run(args: argparse.Namespace) -> None:
    ctx = zmq.Context()
    sock = ctx.socket(TYPES[args.type])
    configure(sock, args)
    if args.monitor:
        threading.Thread(target=watch, args=(sock.monitor(),), daemon=True).start()
    if args.type == "sub":
        for prefix in args.subscribe or [""]:
            sock.subscribe(prefix.encode())
    elif args.type == "xsub":
        for prefix in args.subscribe:
            sock.subscribe(prefix.encode())
    for group in args.join:
        sock.join(group)
    ready = []
    for endpoint in args.bind:
        sock.bind(endpoint)
        ready.append(sock.last_endpoint.decode())
    for endpoint in args.connect:
        sock.connect(endpoint)
        ready.append(endpoint)
    out({"ready": ready})

    if args.forever:
        # a lossy sender (RADIO, PUB) that cannot know when the other side is ready
        received = 0
        i = 0
        while received < args.recv or not args.recv:
            send_one(sock, args, i)
            i += 1
            deadline = time.monotonic() + args.interval / 1000
            while received < args.recv:
                try:
                    receive(sock, args, zmq.DONTWAIT)
                    received += 1
                except zmq.Again:
                    if time.monotonic() >= deadline:
                        break
                    time.sleep(0.002)
            else:
                time.sleep(max(0.0, deadline - time.monotonic()))
        out({"done": True})
        os._exit(0)
    if args.recv_first:
        for _ in range(args.recv):
            receive(sock, args)
    for i in range(args.send):
        send_one(sock, args, i)
        if args.interval:
            time.sleep(args.interval / 1000)
    if not args.recv_first:
        for _ in range(args.recv):
            receive(sock, args)
    for i in range(args.request):
        send_one(sock, args, i)
        receive(sock, args)
    for _ in range(args.echo):
        echo(sock, args)
    if args.stay:
        # report, then stay until stdin closes: the caller has what it needs by then,
        # so no message is lost to an exit before omq.rs flushed it
        out({"done": True})
        wait_for_stdin_close()
        sock.close()
        ctx.term()
        return
    time.sleep(args.after / 1000)  # let the last messages leave
    sock.close()
    ctx.term()
    out({"done": True})


def main(argv: list[str]) -> int:
    try:
        args = parse(argv)
    except Usage as exc:
        sys.stderr.write(f"peer.py: {exc}\n")
        return 2

    def expire() -> None:
        if args.forever and not args.recv:
            out({"done": True})
            os._exit(0)
        sys.stderr.write(f"peer.py: timed out after {args.timeout:.0f} ms\n")
        sys.stderr.flush()
        os._exit(3)

    timer = threading.Timer(args.timeout / 1000, expire)
    timer.daemon = True
    timer.start()
    try:
        run(args)
    except Exception as exc:
        sys.stderr.write(f"peer.py: {type(exc).__name__}: {exc}\n")
        sys.stderr.flush()
        os._exit(1)
    timer.cancel()
    sys.stdout.flush()
    os._exit(0)  # pyomq's runtime thread is not waited for: everything was flushed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
