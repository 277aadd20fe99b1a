"""What ``pip install trizmq`` gets: the wheel carries ``py.typed`` (so a user's
``mypy --strict`` checks their code against trizmq's annotations, shown on a small
program) and the license; the sdist carries what the test suite needs."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

USER_PROGRAM = """
import trio
import trizmq


async def main() -> None:
    async with trizmq.Pull(bind="inproc://typed", rcvhwm=10) as pull:
        hwm: int = pull.options.rcvhwm
        frame: bytes = await pull.recv()
        doc: object = await pull.recv_json()
        print(hwm, frame, doc)


trio.run(main)
"""

WRONG_PROGRAM = """
import trizmq

pull = trizmq.Pull()
hwm: str = pull.options.rcvhwm
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0 and "No module named build" in done.stderr:
        pytest.skip("the build package is missing: pip install build (make test installs it)")
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_wheel_is_typed_and_licensed(dist: Path) -> None:
    [wheel] = dist.glob("trizmq-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = archive.read(metadata).decode()
    assert "trizmq/py.typed" in names
    assert "_trizmq_entry.py" in names  # the console script's first step
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert "License-Expression: MPL-2.0" in text


def test_the_sdist_carries_the_test_suite(dist: Path) -> None:
    [sdist] = dist.glob("trizmq-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    for needed in (
        "LICENSE",
        "Makefile",
        "package.json",
        "tests/conftest.py",
        "tests/interop/test_interop_messages.py",
        "tests/node/peer.js",
        "tests/jeromq/Peer.java",
        "examples/pipeline.py",
        "benchmarks/run.py",
        "trizmq/py.typed",
    ):
        assert needed in names, needed


def test_a_users_mypy_strict_checks_code_against_the_installed_wheel(
    dist: Path, tmp_path: Path
) -> None:
    """The wheel unpacked as site-packages of a bare environment whose .pth also points
    at this environment's packages (trio, attrs): mypy finds trizmq the PEP 561 way."""
    [wheel] = dist.glob("trizmq-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    env_python = env / "bin" / "python"
    env_site = Path(
        subprocess.run(
            [str(env_python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = sysconfig.get_paths()["purelib"]
    (env_site / "deps.pth").write_text(f"{site}\n{ours}\n")
    good, bad = tmp_path / "user.py", tmp_path / "wrong.py"
    good.write_text(USER_PROGRAM)
    bad.write_text(WRONG_PROGRAM)
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}

    def mypy(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
             "--python-executable", str(env_python), str(path)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=environ,
            timeout=600,
        )  # fmt: skip

    checked = mypy(good)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    wrong = mypy(bad)
    assert wrong.returncode == 1, wrong.stdout
    assert 'Incompatible types in assignment (expression has type "int"' in wrong.stdout
