"""``hello_msg`` and ``disconnect_msg`` (libzmq's draft ZMQ_HELLO_MSG and
ZMQ_DISCONNECT_MSG) on ROUTER and DEALER, with libzmq DEALER and ROUTER peers."""

from __future__ import annotations

import pytest
import trio
import zmq

import trizmq


async def test_router_greets_and_reports_libzmq_dealers(
    zmq_ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    with trio.fail_after(10):
        async with trizmq.Router(
            bind="tcp://127.0.0.1:0", hello_msg=b"HELLO", disconnect_msg=b"GONE"
        ) as router:
            dealer = zmq_ctx.socket(zmq.DEALER)
            dealer.linger = 0
            dealer.rcvtimeo = 5000
            dealer.connect(router.statistics()["bound"][0])
            assert await trio.to_thread.run_sync(dealer.recv) == b"HELLO"
            dealer.send(b"work")
            rid, body = await router.recv_multipart()
            assert body == b"work"
            dealer.close()
            assert await router.recv_multipart() == [rid, b"GONE"]
            # the route is gone with it
            assert router.statistics()["routes"] == 0


async def test_dealer_greets_a_libzmq_router(zmq_ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
    router = zmq_ctx.socket(zmq.ROUTER)
    router.linger = 0
    router.rcvtimeo = 5000
    port = router.bind_to_random_port("tcp://127.0.0.1")
    with trio.fail_after(10):
        async with trizmq.Dealer(connect=f"tcp://127.0.0.1:{port}", hello_msg="HI"):
            _rid, body = await trio.to_thread.run_sync(router.recv_multipart)
            assert body == b"HI"
    router.close()


async def test_batch_receives_see_the_disconnect_message_too() -> None:
    with trio.fail_after(5):
        async with trizmq.Router(bind="inproc://farewell", disconnect_msg=b"BYE") as router:
            async with trizmq.Dealer(connect="inproc://farewell") as dealer:
                await dealer.send(b"last words")
                rid, _ = await router.recv_multipart()
            assert await router.recv_many() == [[rid, b"BYE"]]


def test_where_the_options_apply() -> None:
    with pytest.raises(TypeError, match="does not apply to a DEALER"):
        trizmq.Dealer(disconnect_msg=b"x")
    with pytest.raises(TypeError, match="does not apply to a PUSH"):
        trizmq.Push(hello_msg=b"x")
