"""The "lazy pirate" reliable request-reply client from the ZeroMQ guide (chapter 4).

A REQ socket has no way to recover from a lost request or reply: it waits for an
answer forever, and will not send again until it gets one. The lazy pirate client
therefore puts a timeout on every reply (``trio.move_on_after``), and when it
expires it *closes* its REQ socket (dropping the lost request with it), opens a
fresh one and resends, up to ``--retries`` times before it gives up on the server.
Replies carry the request's sequence number, so the client can check each one.

The server here is flaky on purpose, so that the retry path runs: a REP socket that
answers most requests, but every ``--stall-every``-th request it "overloads" (waits
past the client's timeout before answering, by which time the client has given up
that socket and the reply is dropped), and every ``--crash-every``-th request it
"crashes" (closes its socket without answering, then restarts on the same endpoint).

Both run in one trio program, which prints what happens and a summary, and shuts
down cleanly on Ctrl-C or SIGTERM (exit status 0). It exits with status 1 only if
the client gave up because the server stayed silent through every retry.

    python examples/lazy_pirate.py [--requests N] [--timeout SECONDS] [--retries N]
                                   [--stall-every N] [--crash-every N] [--endpoint E]
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import dataclass

import trio

import trizmq


@dataclass
class Tally:
    """What happened during the run."""

    answered: int = 0
    retries: int = 0
    stalls: int = 0
    crashes: int = 0
    abandoned: bool = False


async def flaky_server(
    endpoint: str,
    stall_every: int,
    crash_every: int,
    stall_for: float,
    tally: Tally,
    task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Echo requests over REP, stalling and crashing now and then; runs until cancelled."""
    seen = 0
    while True:
        async with trizmq.Rep(bind=endpoint, linger=0) as rep:
            # a restart binds the endpoint actually bound (a port of 0 is resolved once)
            endpoint = rep.statistics()["bound"][0]
            task_status.started(endpoint)
            task_status = trio.TASK_STATUS_IGNORED
            while True:
                request = await rep.recv()
                seen += 1
                if crash_every and seen % crash_every == 0:
                    print(f"server: crash with request {request.decode()} unanswered")
                    tally.crashes += 1
                    break
                if stall_every and seen % stall_every == 0:
                    print(f"server: overloaded, answering {request.decode()} late")
                    tally.stalls += 1
                    await trio.sleep(stall_for)
                await rep.send(request)
        await trio.sleep(stall_for / 10)  # the restart
        print("server: restarted")


async def lazy_pirate_client(
    endpoint: str, requests: int, timeout: float, retries: int, tally: Tally
) -> None:
    """Send ``requests`` numbered requests, each retried on a fresh socket on timeout."""
    for sequence in range(1, requests + 1):
        request = str(sequence).encode()
        for attempt in range(retries + 1):
            if attempt:
                tally.retries += 1
                print(f"client: no reply to {sequence}, retrying on a new socket ({attempt})")
            # linger=0: a request that was never delivered is dropped with the socket
            async with trizmq.Req(connect=endpoint, linger=0) as req:
                await req.send(request)
                with trio.move_on_after(timeout):
                    reply = await req.recv()
                    if reply != request:
                        raise RuntimeError(f"malformed reply {reply!r} to {request!r}")
                    tally.answered += 1
                    print(f"client: reply {sequence} OK")
                    break
        else:
            print(f"client: server seems to be offline, abandoning after {retries} retries")
            tally.abandoned = True
            return


async def lazy_pirate(args: argparse.Namespace, tally: Tally) -> None:
    """Server and client; prints a summary however the run ends."""
    try:
        async with trio.open_nursery() as nursery:
            endpoint = await nursery.start(
                flaky_server,
                args.endpoint,
                args.stall_every,
                args.crash_every,
                args.timeout * 1.5,
                tally,
            )
            await lazy_pirate_client(endpoint, args.requests, args.timeout, args.retries, tally)
            nursery.cancel_scope.cancel()
    finally:
        print(
            f"{'done' if tally.answered == args.requests else 'stopped'}: "
            f"{tally.answered} of {args.requests} requests answered, {tally.retries} retries "
            f"(server: {tally.stalls} stalls, {tally.crashes} crashes)"
        )


async def main(args: argparse.Namespace, tally: Tally) -> None:
    """Run until the client finishes or a SIGINT/SIGTERM arrives."""
    async with trio.open_nursery() as nursery:
        await nursery.start(stop_on_signal, nursery.cancel_scope)
        await lazy_pirate(args, tally)
        nursery.cancel_scope.cancel()


async def stop_on_signal(
    scope: trio.CancelScope, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
) -> None:
    """Cancel ``scope`` at the first SIGINT or SIGTERM (handled from ``started()`` on)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        task_status.started()
        async for signum in signals:
            print(f"{signal.Signals(signum).name}: shutting down")
            scope.cancel()
            return


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=1.0, help="seconds to wait for a reply")
    parser.add_argument("--retries", type=int, default=3)
    parser.add_argument("--stall-every", type=int, default=4, help="0: never")
    parser.add_argument("--crash-every", type=int, default=7, help="0: never")
    parser.add_argument("--endpoint", default="tcp://127.0.0.1:5555")
    args = parser.parse_args()
    tally = Tally()
    trio.run(main, args, tally)
    sys.exit(1 if tally.abandoned else 0)
