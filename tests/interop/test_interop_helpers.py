"""``send_string``/``recv_string``/``send_json``/``recv_json`` against pyzmq's helpers:
the same wire form both ways (UTF-8 text; UTF-8 JSON)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import zmq

import trizmq

DOCS: list[Any] = [
    {"job": 42, "tags": ["a", "b"], "ok": True, "none": None},
    [1, 2.5, "три", {"nested": []}],
    "just a string",
    7,
]


async def test_pyzmq_send_json_and_string_to_trizmq(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    with trio.fail_after(10):
        async with trizmq.Pull(bind="tcp://127.0.0.1:0") as pull:
            push = zmq_ctx.socket(zmq.PUSH)
            push.linger = 0
            push.connect(pull.statistics()["bound"][0])
            for doc in DOCS:
                push.send_json(doc)
            push.send_string("héllo wörld")
            push.send_string("latin-1 text é", encoding="latin-1")
            assert [await pull.recv_json() for _ in DOCS] == DOCS
            assert await pull.recv_string() == "héllo wörld"
            assert await pull.recv_string(encoding="latin-1") == "latin-1 text é"
            push.close()


async def test_trizmq_send_json_and_string_to_pyzmq(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    pull = zmq_ctx.socket(zmq.PULL)
    pull.linger = 0
    port = pull.bind_to_random_port("tcp://127.0.0.1")
    with trio.fail_after(10):
        async with trizmq.Push(connect=f"tcp://127.0.0.1:{port}") as push:
            for doc in DOCS:
                await push.send_json(doc)
            push.send_string_nowait("héllo wörld")
            await push.send_string("latin-1 text é", encoding="latin-1")

            def read() -> list[Any]:
                docs = [pull.recv_json() for _ in DOCS]
                return [*docs, pull.recv_string(), pull.recv_string(encoding="latin-1")]

            got = await trio.to_thread.run_sync(read)
    assert got == [*DOCS, "héllo wörld", "latin-1 text é"]
    pull.close()


async def test_helpers_refuse_what_they_cannot_carry() -> None:
    with trio.fail_after(5):
        async with (
            trizmq.Pair(bind="inproc://helpers") as a,
            trizmq.Pair(connect="inproc://helpers") as b,
        ):
            with pytest.raises(TypeError, match="takes a str, not bytes"):
                await a.send_string(b"bytes")  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="not JSON serializable"):
                await a.send_json({1, 2})
            await a.send(b"\xff not json")
            with pytest.raises(ValueError):
                await b.recv_json()
            with pytest.raises(trio.WouldBlock):
                b.recv_string_nowait()
            a.send_json_nowait({"x": 1})
            assert await b.recv_json() == {"x": 1}
