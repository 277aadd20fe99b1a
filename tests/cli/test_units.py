"""The command line's pure parts: framing, the socket-type tables, key parsing, the
duration options."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

import trizmq
from trizmq.cli._common import (
    CAN_RECV,
    CAN_SEND,
    SINGLE_PART,
    SOCKET_TYPES,
    CliError,
    byte_size,
    parse_side,
    seconds_option,
)
from trizmq.cli._keys import load_key, z85_decode, z85_encode
from trizmq.cli.stdio_formats import encode, make_decoder


def test_type_tables_match_the_socket_strategies() -> None:
    for name, cls in SOCKET_TYPES.items():
        strategy = cls()._strategy
        assert (name in CAN_SEND) == strategy.can_send, name
        assert (name in CAN_RECV) == strategy.can_recv, name
    assert set(SOCKET_TYPES) >= SINGLE_PART


def test_the_types_are_the_tables_zmtp_ones() -> None:
    # the command line's types come from the socket-type table: every type that speaks
    # ZMTP, each by its public class; the choices users see stay these
    assert sorted(SOCKET_TYPES) == [
        "channel", "client", "dealer", "dish", "gather", "pair", "peer", "pub", "pull",
        "push", "radio", "rep", "req", "router", "scatter", "server", "sub", "xpub", "xsub",
    ]  # fmt: skip
    for name, cls in SOCKET_TYPES.items():
        assert cls.socket_type == name.upper()
        assert getattr(trizmq, cls.__name__) is cls
    assert "stream" not in SOCKET_TYPES  # raw tcp peers, no ZMTP


@pytest.mark.parametrize("fmt", ["line", "length-prefixed"])
def test_framing_round_trip_in_pieces(fmt: str) -> None:
    messages = [[b"a", b"b"], [b"single"], [b"", b"x", b""]]
    data = b"".join(encode(fmt, m, b"|") for m in messages)
    decoder = make_decoder(fmt, b"|")
    out = []
    for i in range(len(data)):  # one byte at a time
        out.extend(decoder.feed(data[i : i + 1]))
    out.extend(decoder.finish())
    assert out == messages


def test_raw_and_line_defaults() -> None:
    assert encode("raw", [b"a", b"b"], None) == b"ab"
    assert encode("line", [b"a", b"b"], None) == b"a b\n"
    decoder = make_decoder("raw", None)
    assert decoder.feed(b"x\ny") == []
    assert decoder.finish() == [[b"x\ny"]]


def test_truncated_length_prefixed_input() -> None:
    decoder = make_decoder("length-prefixed", None)
    decoder.feed(b"\x80\x00\x00\x01a")  # MORE set, no last frame
    with pytest.raises(CliError):
        decoder.finish()


def test_z85_and_keys() -> None:
    raw = bytes(range(32))
    text = z85_encode(raw)
    assert len(text) == 40 and z85_decode(text) == raw
    assert z85_encode(bytes.fromhex("864FD26FB559F75B")) == b"HelloWorld"  # RFC 32
    assert load_key(text.decode(), "--k") == raw
    assert load_key(raw.hex(), "--k") == raw
    with pytest.raises(CliError, match="bad key"):
        load_key("~" * 40, "--k")


def test_parse_side() -> None:
    assert str(parse_side("tcp://*:1")) == "bind:tcp://*:1"
    assert str(parse_side("connect:tcp://h:1")) == "connect:tcp://h:1"
    assert str(parse_side("ipc://x.sock", default="connect")) == "connect:ipc://x.sock"


def test_seconds_option_bounds_and_defaults() -> None:
    @click.command()
    @seconds_option("--wait", minimum=0.5, default=2.0, help="How long to wait.")
    @seconds_option("--timeout", help="Stop after SECONDS.")
    def command(wait: float, timeout: float | None) -> None:
        click.echo(f"{wait!r} {timeout!r}")

    runner = CliRunner()
    assert runner.invoke(command, []).output == "2.0 None\n"
    assert runner.invoke(command, ["--wait", "0.5", "--timeout", "3"]).output == "0.5 3.0\n"
    refused = runner.invoke(command, ["--wait", "0.1"])
    assert refused.exit_code == 2 and "0.1 is not in the range x>=0.5" in refused.output
    assert runner.invoke(command, ["--timeout", "-1"]).exit_code == 2
    shown = runner.invoke(command, ["--help"]).output
    assert "--wait SECONDS" in shown and "[default: 2.0; x>=0.5]" in shown
    assert "--timeout SECONDS" in shown and "default" not in shown.split("--timeout")[1]


@pytest.mark.parametrize(
    ("count", "text"),
    [(0, "0 B"), (1023, "1023 B"), (1024, "1.0 KiB"), (1536, "1.5 KiB"), (5 << 20, "5.0 MiB")],
)
def test_byte_size(count: int, text: str) -> None:
    assert byte_size(count) == text
    assert byte_size(3 << 40) == "3072.0 GiB"  # GiB is the largest unit
