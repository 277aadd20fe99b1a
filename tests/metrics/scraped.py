"""A process for a Prometheus server to scrape (tests/metrics/test_prometheus_server.py).

It binds a PULL and connects a PUSH over tcp, registers both (``push``, ``pull``) in
a registry of their own, serves it on a free port and writes the URL on stdout; then
sends COUNT messages, receives them and writes ``exchanged``. On stdin, the line
``close`` closes the PUSH (writing ``closed``); the end of stdin ends the process.
"""

from __future__ import annotations

import sys

import trio
from prometheus_client import CollectorRegistry

import trizmq
import trizmq.metrics


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(count: int) -> None:
    registry = CollectorRegistry()
    with trio.fail_after(600):  # never outlive a forgotten test
        async with trizmq.Pull(linger=0) as pull:
            endpoint = await pull.bind("tcp://127.0.0.1:0")
            push = trizmq.Push(linger=0, connect=[endpoint])
            async with push:
                trizmq.metrics.register(push, registry, name="push")
                trizmq.metrics.register(pull, registry, name="pull")
                with trizmq.metrics.serve(0, registry=registry) as server:
                    say(server.url)
                    for i in range(count):
                        await push.send(b"message %d" % i)
                    for _ in range(count):
                        await pull.recv()
                    say("exchanged")
                    while True:
                        line = await trio.to_thread.run_sync(sys.stdin.readline)
                        if line.strip() == "close":
                            await push.aclose()
                            say("closed")
                        elif not line:
                            return


if __name__ == "__main__":
    trio.run(main, int(sys.argv[1]))
