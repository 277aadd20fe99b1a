"""Tasks waiting for a condition: a lighter ``trio.lowlevel.ParkingLot``.

The hot paths wake a waiting task once per message batch (a receiver when a pipe
becomes readable, a sender when it drops under its mark, a writer when work
arrives). :class:`Waiters` does only what they need, with trio's public low-level
API (``wait_task_rescheduled``/``reschedule``): park the current task, wake every
parked task. It skips what a ParkingLot adds (counts, repark, breaking, statistics)
and its generator per wake-up, which is measurable on a request-reply round trip.
"""

from __future__ import annotations

import trio

__all__ = ["Waiters"]

_current_task = trio.lowlevel.current_task
_reschedule = trio.lowlevel.reschedule
_wait = trio.lowlevel.wait_task_rescheduled
_SUCCEEDED = trio.lowlevel.Abort.SUCCEEDED


class Waiters:
    """Tasks parked until :meth:`unpark_all`; cancellation removes a task cleanly."""

    __slots__ = ("_tasks",)

    def __init__(self) -> None:
        # a dict as an ordered set: tasks wake in the order they parked
        self._tasks: dict[trio.lowlevel.Task, None] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def __bool__(self) -> bool:
        return bool(self._tasks)

    async def park(self) -> None:
        """Wait until :meth:`unpark_all` (a checkpoint: cancellation ends the wait)."""
        task = _current_task()
        tasks = self._tasks
        tasks[task] = None

        def abort(_: object) -> trio.lowlevel.Abort:
            tasks.pop(task, None)
            return _SUCCEEDED

        await _wait(abort)

    def unpark_all(self) -> None:
        """Wake every parked task."""
        tasks = self._tasks
        if tasks:
            self._tasks = {}
            for task in tasks:
                _reschedule(task)
