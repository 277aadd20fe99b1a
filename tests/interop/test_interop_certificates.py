"""Certificates shared with pyzmq's ``zmq.auth`` both ways, and a directory of them
admitting CURVE clients (re-read when it changes)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import trio
import zmq
import zmq.auth

import trizmq
import trizmq.auth


def test_pyzmq_reads_trizmq_certificates(tmp_path: Path) -> None:
    public_file, secret_file = trizmq.auth.create_certificates(
        tmp_path, "server", metadata={"owner": "ops", "tier": b"gold"}
    )
    assert (public_file, secret_file) == (
        str(tmp_path / "server.key"),
        str(tmp_path / "server.key_secret"),
    )
    public, secret = zmq.auth.load_certificate(secret_file)
    assert zmq.auth.load_certificate(public_file) == (public, None)
    assert trizmq.auth.load_certificate(secret_file) == (public, secret)
    assert secret is not None and zmq.curve_public(secret) == public
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600
    assert "    owner = ops\n" in Path(secret_file).read_text()
    assert zmq.auth.load_certificates(tmp_path) == {public: True}


def test_trizmq_reads_pyzmq_certificates(tmp_path: Path) -> None:
    public_file, secret_file = zmq.auth.create_certificates(tmp_path, "client", {"a": "b"})
    public, secret = zmq.auth.load_certificate(secret_file)
    assert trizmq.auth.load_certificate(secret_file) == (public, secret)
    assert trizmq.auth.load_certificate(public_file) == (public, None)
    assert trizmq.auth.load_certificates(tmp_path) == {public: True}


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("metadata\ncurve\n", "no public key"),
        ('curve\n    public-key = "short"\n', "not 40"),
        ('curve\n    public-key = "' + "~" * 40 + '"\n', "bad key"),
    ],
)
def test_malformed_certificates_are_value_errors(tmp_path: Path, content: str, reason: str) -> None:
    path = tmp_path / "bad.key"
    path.write_text(content)
    with pytest.raises(ValueError, match=reason):
        trizmq.auth.load_certificate(path)


async def test_a_certificate_directory_admits_its_clients(tmp_path: Path) -> None:
    """A pyzmq CURVE client whose certificate is in the directory gets in; one whose
    certificate is not is refused, and gets in once its certificate is moved there."""
    clients = tmp_path / "clients"
    clients.mkdir()
    zmq.auth.create_certificates(clients, "alice")
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    bob_public_file, bob_secret_file = zmq.auth.create_certificates(secrets, "bob")
    alice = zmq.auth.load_certificate(clients / "alice.key")[0]
    server_public, server_secret = trizmq.curve_keypair()
    ctx = zmq.Context()
    try:
        with trio.fail_after(15):
            async with (
                trizmq.Authenticator(curve_directory=clients) as auth,
                trizmq.Pull(
                    bind="tcp://127.0.0.1:0", security=trizmq.CurveServer(secret_key=server_secret)
                ) as pull,
            ):
                endpoint = pull.statistics()["bound"][0]
                assert auth.directory_keys() == {zmq.utils.z85.decode(alice)}

                def client(name: str, secret_file: Path | str) -> zmq.Socket[bytes]:
                    public, secret = zmq.auth.load_certificate(secret_file)
                    sock = ctx.socket(zmq.PUSH)
                    sock.linger = 0
                    sock.curve_serverkey, sock.curve_publickey = server_public, public
                    sock.curve_secretkey = secret
                    sock.connect(endpoint)
                    sock.send(name.encode())
                    return sock

                made: list[zmq.Socket[bytes]] = []
                try:
                    made.append(client("alice", clients / "alice.key_secret"))
                    assert await pull.recv() == b"alice"
                    made.append(client("bob", bob_secret_file))
                    while auth.refused == 0:  # bob's certificate is not in the directory
                        await trio.sleep(0.01)
                    # libzmq gives up on a refused handshake; a new client after the
                    # certificate is moved in finds the directory re-read
                    os.replace(bob_public_file, clients / "bob.key")
                    made.append(client("bob again", bob_secret_file))
                    assert await pull.recv() == b"bob again"
                    assert auth.refused == 1 and auth.admitted == 2
                finally:
                    for sock in made:
                        sock.close()
    finally:
        ctx.destroy(linger=0)
