"""The process's open sockets (``trizmq._open_sockets``): in while open, out once closed."""

from __future__ import annotations

import trizmq
from trizmq import _open_sockets


async def test_a_socket_is_open_from_its_entry_to_its_close() -> None:
    push = trizmq.Push(linger=0)
    assert push not in _open_sockets.open_sockets()
    async with push:
        assert push in _open_sockets.open_sockets()
    assert push not in _open_sockets.open_sockets()


async def test_default_names_count_per_type_and_stay() -> None:
    async with trizmq.Pull(linger=0) as a, trizmq.Pull(linger=0) as b, trizmq.Pub() as c:
        names = [_open_sockets.default_name(s) for s in (a, b, c)]
        assert names[0].startswith("pull-") and names[1].startswith("pull-")
        assert int(names[1].split("-")[1]) == int(names[0].split("-")[1]) + 1
        assert names[2].startswith("pub-")
        assert [_open_sockets.default_name(s) for s in (a, b, c)] == names

