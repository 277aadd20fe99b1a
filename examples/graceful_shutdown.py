"""A service that shuts down cleanly on SIGINT/SIGTERM, losing no accepted work.

    jobs --PUSH--> [PULL front] --> bounded queue --> worker nursery --> [PUB results]

The PULL front accepts jobs into a bounded in-process queue; a nursery of workers
takes them and publishes each result on a PUB. On SIGINT or SIGTERM the service:

1. stops accepting (jobs still queued inside the PULL socket were never accepted
   and are left to the sender's own retry logic),
2. lets the workers finish every job already accepted,
3. closes the PUB, which flushes the last results for up to ``linger`` seconds,
4. prints what it accepted and published, and exits with status 0.

    python examples/graceful_shutdown.py --front tcp://127.0.0.1:5570 \\
        --results tcp://127.0.0.1:5571 [--workers 4]
"""

from __future__ import annotations

import argparse
import signal

import trio

import trizmq


async def accept_jobs(
    pull: trizmq.Pull, queue: trio.MemorySendChannel[bytes], stats: dict[str, int]
) -> None:
    """Move jobs from the socket into the queue until cancelled."""
    async with queue:
        async for (job,) in pull:
            # the shield keeps a job from being lost between the socket and the queue
            with trio.CancelScope(shield=True):
                await queue.send(job)
                stats["accepted"] += 1


async def worker(
    jobs: trio.MemoryReceiveChannel[bytes], pub: trizmq.Pub, stats: dict[str, int]
) -> None:
    """Square the number in each job and publish it on the 'result' topic."""
    async with jobs:
        async for job in jobs:
            await trio.sleep(0.001)  # the "work"
            value = int(job)
            await pub.send_multipart([b"result", b"%d" % value, b"%d" % (value * value)])
            stats["published"] += 1


async def serve(front: str, results: str, workers: int) -> dict[str, int]:
    """Run until SIGINT/SIGTERM, then drain accepted work and return the counts."""
    stats = {"accepted": 0, "published": 0}
    async with trizmq.Pub(bind=results, linger=5) as pub:
        send, receive = trio.open_memory_channel[bytes](100)
        async with trio.open_nursery() as workers_nursery:
            for _ in range(workers):
                workers_nursery.start_soon(worker, receive.clone(), pub, stats)
            await receive.aclose()
            async with trizmq.Pull(bind=front) as pull:
                print("serving", flush=True)
                async with trio.open_nursery() as front_nursery:
                    front_nursery.start_soon(accept_jobs, pull, send, stats)
                    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                        async for signum in signals:
                            print(f"{signal.Signals(signum).name}: draining", flush=True)
                            break
                    front_nursery.cancel_scope.cancel()  # stop accepting
            # leaving the workers' nursery waits for every accepted job
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--front", default="tcp://127.0.0.1:5570")
    parser.add_argument("--results", default="tcp://127.0.0.1:5571")
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    stats = trio.run(serve, args.front, args.results, args.workers)
    print(f"accepted {stats['accepted']} published {stats['published']}", flush=True)


if __name__ == "__main__":
    main()
