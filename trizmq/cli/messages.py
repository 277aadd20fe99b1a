"""``trizmq send`` and ``trizmq recv``: messages between stdin/stdout and a socket.

Rules:

* Input and output formats are :mod:`trizmq.cli.stdio_formats`'s (line, raw,
  length-prefixed). ``send`` takes its messages from its arguments when it has
  some, else from stdin until end of input.
* Address frames: a ROUTER's first frame (the peer's routing id) is written and
  read as hex in line mode, raw bytes otherwise; a SERVER/PEER message starts with
  the routing id as decimal text (``42|hello``), in every format; a DISH writes the
  data only. RADIO takes its group from ``--group``.
* ``send`` on a type that drops messages while it has no peer (PUB, XPUB, RADIO over
  tcp/ipc, ROUTER, SERVER, PEER) first waits for one handshake, then ``--settle``
  seconds more so subscriptions and joins arrive. PUSH, DEALER, REQ, ... wait by
  themselves. On exit the socket keeps flushing for up to ``--linger`` seconds.
* ``send --type req`` prints each reply; ``send --type rep`` prints each request
  then answers it with the next input message. ``recv --type rep`` answers each
  request with ``--reply`` or, without it, with the request itself (echo).
* ``--count N`` stops after N messages, ``--timeout S`` after S seconds in all. A
  ``send`` that times out fails; a ``recv`` that times out fails only when it was
  given a ``--count`` it did not reach.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TYPE_CHECKING, TypedDict, TypeVar

import attrs
import click
import trio

import trizmq

from ._common import (
    CAN_RECV,
    CAN_SEND,
    SINGLE_PART,
    SOCKET_TYPES,
    CliError,
    EndpointSpec,
    attach,
    endpoint_specs,
    make_socket,
    plural,
    run,
    seconds_option,
)
from ._security_flags import SecurityPlan, open_security, plan_security, plan_tls, security_options
from .monitor import format_event
from .stdio_formats import encode, make_decoder

if TYPE_CHECKING:
    from typing_extensions import NotRequired, Unpack

    from .._security import Security

__all__ = ["recv", "send"]

#: socket types that drop what they send while no peer is there: send waits for one
DROPS_WITHOUT_PEER = frozenset({"pub", "xpub", "radio", "router", "server", "peer"})

_TYPE = click.Choice(sorted(SOCKET_TYPES), case_sensitive=False)

F = TypeVar("F", bound=Callable[..., object])


class CommonOptions(TypedDict):
    """The options of :func:`_common_options` as click hands them to ``send`` and
    ``recv`` (``subscribe`` and ``join`` are ``recv``'s alone)."""

    type_name: str
    bind: tuple[str, ...]
    connect: tuple[str, ...]
    fmt: str
    separator: str | None
    count: int | None
    timeout: float | None
    linger: float
    routing_id: str | None
    verbose: bool
    curve_server_key: str | None
    curve_public_key: str | None
    curve_secret_key: str | None
    plain_username: str | None
    plain_password: str | None
    plain_server: bool
    tls_cert: str | None
    tls_key: str | None
    tls_ca: str | None
    subscribe: NotRequired[tuple[str, ...]]
    join: NotRequired[tuple[str, ...]]


@attrs.define
class Common:
    """The options ``send`` and ``recv`` share."""

    type_name: str
    endpoints: list[EndpointSpec]
    fmt: str
    separator: bytes | None
    count: int | None
    timeout: float | None
    linger: float
    routing_id: bytes | None
    security: SecurityPlan | None
    ssl_context: ssl.SSLContext | None = None
    verbose: bool = False
    subscribe: tuple[bytes, ...] = ()
    join: tuple[bytes, ...] = ()


def _common_options(fn: F) -> F:
    options = [
        click.option(
            "-t",
            "--type",
            "type_name",
            type=_TYPE,
            required=True,
            metavar="TYPE",
            help="Socket type: " + ", ".join(sorted(SOCKET_TYPES)) + ".",
        ),
        click.option("-b", "--bind", multiple=True, metavar="ENDPOINT", help="Bind (repeatable)."),
        click.option(
            "-c", "--connect", multiple=True, metavar="ENDPOINT", help="Connect (repeatable)."
        ),
        click.option(
            "--raw", "fmt", flag_value="raw", help="One message is the whole stdin/each output."
        ),
        click.option(
            "--length-prefixed",
            "fmt",
            flag_value="length-prefixed",
            help="Frames as 4-byte big-endian length + bytes (top bit: more frames follow).",
        ),
        click.option(
            "--line", "fmt", flag_value="line", default=True, help="One message per line (default)."
        ),
        click.option(
            "-s",
            "--separator",
            metavar="TEXT",
            help="Line mode: split a line into frames at TEXT (and join frames with it).",
        ),
        click.option(
            "-n", "--count", type=click.IntRange(min=1), help="Stop after this many messages."
        ),
        seconds_option("--timeout", help="Stop after SECONDS."),
        seconds_option(
            "--linger", default=5.0, help="How long closing keeps flushing unsent messages."
        ),
        click.option("--routing-id", metavar="TEXT", help="This socket's routing id (identity)."),
        click.option(
            "-v",
            "--verbose",
            is_flag=True,
            help="Show the socket's events on stderr: connections, refusals, failed "
            "handshakes with their reason.",
        ),
    ]
    fn = security_options(fn)
    for option in reversed(options):
        fn = option(fn)
    return fn


def _common(kw: CommonOptions) -> Common:
    type_name = kw["type_name"].lower()
    separator = kw["separator"]
    if separator == "":
        raise CliError("--separator must not be empty", code=2)
    if separator is not None and kw["fmt"] != "line":
        raise CliError("--separator applies to line mode only", code=2)
    kw.setdefault("subscribe", ())
    kw.setdefault("join", ())
    if kw["subscribe"] and type_name not in ("sub", "xsub"):
        raise CliError("--subscribe applies to --type sub or xsub only", code=2)
    if kw["join"] and type_name != "dish":
        raise CliError("--join applies to --type dish only", code=2)
    if type_name == "dish" and not kw["join"]:
        raise CliError("a DISH receives nothing without --join GROUP", code=2)
    security = plan_security(
        kw["curve_server_key"],
        kw["curve_public_key"],
        kw["curve_secret_key"],
        kw["plain_username"],
        kw["plain_password"],
        kw["plain_server"],
    )
    return Common(
        type_name=type_name,
        endpoints=endpoint_specs(kw["bind"], kw["connect"]),
        fmt=kw["fmt"],
        separator=separator.encode() if separator is not None else None,
        count=kw["count"],
        timeout=kw["timeout"],
        linger=kw["linger"],
        routing_id=kw["routing_id"].encode() if kw["routing_id"] is not None else None,
        security=security,
        ssl_context=plan_tls(kw["tls_cert"], kw["tls_key"], kw["tls_ca"]),
        verbose=kw["verbose"],
        subscribe=tuple(s.encode() for s in kw["subscribe"]),
        join=tuple(g.encode() for g in kw["join"]),
    )


def _socket(c: Common, security: Security | None) -> trizmq.Socket:
    options: dict[str, object] = {"linger": c.linger}
    if c.routing_id is not None:
        options["routing_id"] = c.routing_id
    if security is not None:
        options["security"] = security
    if c.ssl_context is not None:
        options["ssl_context"] = c.ssl_context
    if c.type_name == "sub":
        options["subscribe"] = c.subscribe or (b"",)
    return make_socket(c.type_name, **options)


@contextlib.asynccontextmanager
async def _reporting(sock: trizmq.Socket, c: Common) -> AsyncIterator[None]:
    """With ``--verbose``: every monitor event of ``sock`` on stderr while the body
    runs (a refused or failed handshake then says why, where without it the command
    just waits as for an absent peer)."""
    if not c.verbose:
        yield
        return
    events = sock.monitor()
    shown = ", ".join(spec.endpoint for spec in c.endpoints)
    click.echo(f"trizmq: waiting for peers on {shown}", err=True)

    async def report() -> None:
        async for event in events:
            click.echo(f"trizmq: {format_event(event, as_json=False)}", err=True)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(report)
        try:
            yield
        finally:
            nursery.cancel_scope.cancel()
            events.close()


def _after_enter(sock: trizmq.Socket, c: Common) -> None:
    if isinstance(sock, trizmq.XSub) and not isinstance(sock, trizmq.Sub):
        for topic in c.subscribe or (b"",):
            sock.subscribe(topic)
    if isinstance(sock, trizmq.Dish):
        for group in c.join:
            try:
                sock.join(group)
            except ValueError as exc:
                raise CliError(f"--join: {exc}") from None


# -- stdin / stdout -----------------------------------------------------------------------


async def _read_chunks(fd: int) -> AsyncIterator[bytes]:
    """Chunks of ``fd`` until end of input; a blocking read in a thread, cancellable."""
    while True:
        chunk = await trio.to_thread.run_sync(os.read, fd, 65536, abandon_on_cancel=True)
        if not chunk:
            return
        yield chunk


async def _input_messages(c: Common, args: Iterable[str]) -> AsyncIterator[list[bytes]]:
    args = list(args)
    decoder = make_decoder(c.fmt, c.separator)
    if args:
        for arg in args:
            for msg in decoder.feed(arg.encode() + (b"\n" if c.fmt == "line" else b"")):
                yield msg
            if c.fmt != "line":
                for msg in decoder.finish():
                    yield msg
        return
    async for chunk in _read_chunks(sys.stdin.fileno()):
        for msg in decoder.feed(chunk):
            yield msg
    for msg in decoder.finish():
        yield msg


def _write(c: Common, frames: list[bytes]) -> None:
    out = sys.stdout.buffer
    out.write(encode(c.fmt, frames, c.separator))
    out.flush()


# -- address frames -------------------------------------------------------------------------


def _outgoing_frames(c: Common, frames: list[bytes]) -> list[bytes]:
    """Line-mode text to wire frames (the ROUTER routing id is hex there)."""
    if c.type_name == "router" and c.fmt == "line":
        try:
            return [bytes.fromhex(frames[0].decode("ascii")), *frames[1:]]
        except (ValueError, UnicodeDecodeError):
            raise CliError(
                f"a ROUTER line starts with the peer's routing id in hex, not {frames[0]!r}"
            ) from None
    return frames


async def _send_one(sock: trizmq.Socket, c: Common, frames: list[bytes], group: bytes) -> None:
    kind = c.type_name
    if kind in SINGLE_PART:
        expected = 2 if kind in ("server", "peer") else 1
        if len(frames) != expected:
            what = "a routing id and the data" if expected == 2 else "exactly one frame"
            raise CliError(
                f"a {kind.upper()} message has {what}, not {len(frames)} frames"
                + (" (use --separator)" if expected == 2 and c.fmt == "line" else "")
            )
    try:
        if isinstance(sock, trizmq.Radio):
            await sock.send(frames[0], group=group)
        elif isinstance(sock, trizmq.Server):
            try:
                rid = int(frames[0])
            except ValueError:
                raise CliError(
                    f"a {kind.upper()} message starts with a decimal routing id, not {frames[0]!r}"
                ) from None
            await sock.send(frames[1], routing_id=rid)
        else:
            await sock.send_multipart(_outgoing_frames(c, frames))
    except (ValueError, TypeError) as exc:
        raise CliError(str(exc)) from None


async def _recv_one(sock: trizmq.Socket, c: Common) -> list[bytes]:
    if c.type_name in ("server", "peer"):
        msg = await sock.recv_message()
        return [str(msg.routing_id).encode(), *msg.frames]
    frames = await sock.recv_multipart()
    if c.type_name == "router" and c.fmt == "line":
        frames = [frames[0].hex().encode(), *frames[1:]]
    return frames


async def _wait_for_peer(events: trizmq.Monitor, settle: float) -> None:
    async for event in events:
        if isinstance(event, trizmq.HandshakeSucceeded):
            break
    await trio.sleep(settle)


def _needs_peer_wait(c: Common) -> bool:
    if c.type_name not in DROPS_WITHOUT_PEER:
        return False
    return any(not spec.endpoint.startswith("udp://") for spec in c.endpoints)


# -- send -------------------------------------------------------------------------------------


@click.command()
@_common_options
@click.option("-g", "--group", metavar="GROUP", help="RADIO: the group to send to.")
@seconds_option(
    "--settle",
    default=0.2,
    help="PUB/XPUB/RADIO/ROUTER/SERVER/PEER: wait this long after the first peer's handshake.",
)
@click.argument("messages", nargs=-1)
def send(
    messages: tuple[str, ...], group: str | None, settle: float, **kw: Unpack[CommonOptions]
) -> int:
    """Send MESSAGES, or stdin, through a socket.

    One message per line of stdin (or per argument), split into frames at
    --separator; --raw sends all of stdin as one message; --length-prefixed reads
    binary frames. REQ prints each reply; REP prints each request and answers it
    with the next message.

    \b
    Examples:
      echo hello | trizmq send -t push -c tcp://127.0.0.1:5557
      trizmq send -t pub -b tcp://*:5556 -s '|' 'weather|sunny'
      trizmq send -t req -c tcp://127.0.0.1:5555 ping
      trizmq send -t radio -c udp://127.0.0.1:5558 -g news hello
    """
    c = _common(kw)
    if c.type_name not in CAN_SEND:
        raise CliError(
            f"a {c.type_name.upper()} socket cannot send; try `trizmq recv --type {c.type_name}`",
            code=2,
        )
    if (group is not None) != (c.type_name == "radio"):
        raise CliError("--group is required for --type radio, and only for it", code=2)
    group_bytes = group.encode() if group is not None else b""
    return run(lambda: _send(c, messages, group_bytes, settle))


async def _send(c: Common, args: tuple[str, ...], group: bytes, settle: float) -> int:
    sent = 0
    async with open_security(c.security) as security:
        sock = _socket(c, security)
        async with sock, _reporting(sock, c):
            events = sock.monitor()
            _after_enter(sock, c)
            with trio.move_on_after(c.timeout if c.timeout is not None else float("inf")) as scope:
                await attach(sock, c.endpoints, announce=True)
                if _needs_peer_wait(c):
                    await _wait_for_peer(events, settle)
                events.close()
                async for frames in _input_messages(c, args):
                    if c.count is not None and sent >= c.count:
                        break
                    if c.type_name == "rep":
                        _write(c, await _recv_one(sock, c))
                    await _send_one(sock, c, frames, group)
                    sent += 1
                    if c.type_name == "req":
                        _write(c, await _recv_one(sock, c))
                await _flush(sock, c.linger)
            if scope.cancelled_caught:
                raise CliError(
                    f"timed out after {c.timeout:g} s having sent {plural(sent, 'message')}"
                )
    return 0


async def _flush(sock: trizmq.Socket, linger: float) -> None:
    """Wait, cancellably, until every queued message is written, for up to ``linger``.

    The socket's own close would do the same, but shielded from cancellation: this
    wait lets Ctrl-C end a send at once. Messages still queued after ``linger`` are
    an error (the socket then closes without lingering again).
    """
    with trio.move_on_after(linger):
        while sock.statistics().get("queued_out", 0):
            await trio.sleep(0.01)
        return
    queued = sock.statistics().get("queued_out", 0)
    raise CliError(
        f"{plural(queued, 'message')} still unsent after --linger {linger:g} s "
        "(no peer took them)"
    )


# -- recv -------------------------------------------------------------------------------------


@click.command()
@_common_options
@click.option(
    "--subscribe",
    multiple=True,
    metavar="PREFIX",
    help="SUB/XSUB: subscribe to PREFIX (repeatable; default: everything).",
)
@click.option("--join", multiple=True, metavar="GROUP", help="DISH: join GROUP (repeatable).")
@click.option("--reply", metavar="TEXT", help="REP: answer each request with TEXT (default: echo).")
def recv(reply: str | None, **kw: Unpack[CommonOptions]) -> int:
    """Receive messages from a socket and write them to stdout.

    One message per line (frames joined with --separator, or a space); --raw
    writes each message's bytes as they are; --length-prefixed writes binary
    frames. REP answers each request (--reply, or an echo).

    \b
    Examples:
      trizmq recv -t pull -b tcp://*:5557
      trizmq recv -t sub -c tcp://127.0.0.1:5556 --subscribe weather -s '|'
      trizmq recv -t rep -b tcp://*:5555 --reply pong
      trizmq recv -t dish -b udp://*:5558 --join news
    """
    c = _common(kw)
    if c.type_name not in CAN_RECV:
        raise CliError(
            f"a {c.type_name.upper()} socket cannot receive; "
            f"try `trizmq send --type {c.type_name}`",
            code=2,
        )
    if c.type_name == "req":
        raise CliError("a REQ socket sends first: use `trizmq send --type req`", code=2)
    if reply is not None and c.type_name != "rep":
        raise CliError("--reply applies to --type rep only", code=2)
    reply_frames = None
    if reply is not None:
        reply_frames = reply.encode().split(c.separator) if c.separator else [reply.encode()]
    return run(lambda: _recv(c, reply_frames))


async def _recv(c: Common, reply: list[bytes] | None) -> int:
    received = 0
    async with open_security(c.security) as security:
        sock = _socket(c, security)
        async with sock, _reporting(sock, c):
            _after_enter(sock, c)
            with trio.move_on_after(c.timeout if c.timeout is not None else float("inf")) as scope:
                await attach(sock, c.endpoints, announce=True)
                while c.count is None or received < c.count:
                    frames = await _recv_one(sock, c)
                    _write(c, frames)
                    received += 1
                    if c.type_name == "rep":
                        await sock.send_multipart(reply if reply is not None else frames)
            if scope.cancelled_caught and c.count is not None:
                raise CliError(
                    f"timed out after {c.timeout:g} s having received {received} "
                    f"of {plural(c.count, 'message')}"
                )
    return 0
