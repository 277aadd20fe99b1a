"""The example of docs/testing.md in a fresh project, as a new user would run it.

Each case writes a project into a temporary directory (its own pytest.ini, nothing
of this repository's configuration) and runs pytest on it in a subprocess, with
trizmq's plugin loaded the way users get it: through the ``pytest11`` entry point.
It passes with ``trio_mode = true`` and with ``@pytest.mark.trio`` without it; every
other set-up fails at set-up with the message the docs promise.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import trizmq

DOCS = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
#: the directory trizmq is imported from, so the subprocess tests this very tree
SOURCE_ROOT = Path(trizmq.__file__).resolve().parents[1]
TIMEOUT = 120


def docs_example() -> str:
    """The first test of docs/testing.md that uses the fixtures, verbatim."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOCS.read_text(encoding="utf-8"), re.M | re.S)
    return next(b for b in blocks if "async def test_" in b and "virtual_network" in b)


def marked(code: str) -> str:
    return "import pytest\n" + code.replace("async def test_", "@pytest.mark.trio\nasync def test_")


def without_clock(code: str) -> str:
    changed = code.replace("autojump_clock, ", "")
    assert changed != code, "the docs' example no longer takes autojump_clock"
    return changed


def run_project(
    project: Path, ini: str, files: dict[str, str], *options: str
) -> dict[str, tuple[str, str]]:
    """Run pytest in ``project``: {test file: (outcome, message)}."""
    project.mkdir()
    (project / "pytest.ini").write_text(ini, encoding="utf-8")
    for name, code in files.items():
        (project / name).write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = os.pathsep.join([str(SOURCE_ROOT), env.get("PYTHONPATH", "")])
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-W",
        "error",
        "--junitxml=report.xml",
        *options,
    ]
    done = subprocess.run(
        cmd, cwd=project, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    report = project / "report.xml"
    assert report.exists(), f"pytest did not run:\n{done.stdout}\n{done.stderr}"
    outcomes = {}
    for case in ET.parse(report).iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        outcome = "passed" if problem is None else problem.tag
        message = "" if problem is None else f"{problem.get('message')}\n{problem.text}"
        outcomes[case.get("classname", "")] = (outcome, message)
    assert len(outcomes) == sum(name.startswith("test_") for name in files), done.stdout
    return outcomes


def test_the_docs_example_passes_with_trio_mode(tmp_path: Path) -> None:
    example = docs_example()
    got = run_project(
        tmp_path / "project",
        "[pytest]\ntrio_mode = true\n",
        {
            "test_example.py": example,
            "test_forgot_the_clock.py": without_clock(example),
            "test_sync.py": "def test_sync(zmq_sockets):\n    pass\n",
        },
    )
    assert got["test_example"] == ("passed", "")
    outcome, message = got["test_forgot_the_clock"]
    assert outcome == "error"  # at set-up, before any real time passes
    assert "add pytest-trio's autojump_clock fixture to the test's arguments" in message
    outcome, message = got["test_sync"]
    assert outcome == "error"
    assert "is not an `async def` test" in message


def test_the_docs_example_passes_marked_without_trio_mode(tmp_path: Path) -> None:
    example = docs_example()
    got = run_project(
        tmp_path / "project",
        "[pytest]\n",
        {"test_marked.py": marked(example), "test_unmarked.py": example},
    )
    assert got["test_marked"] == ("passed", "")
    outcome, message = got["test_unmarked"]
    assert outcome == "error"
    assert "mark it @pytest.mark.trio, or set trio_mode = true" in message


def test_without_pytest_trio_the_error_says_to_install_it(tmp_path: Path) -> None:
    got = run_project(
        tmp_path / "project", "[pytest]\n", {"test_example.py": docs_example()}, "-p", "no:trio"
    )
    outcome, message = got["test_example"]
    assert outcome == "error"
    assert "pytest-trio is not installed" in message


def test_the_fixture_checks_the_clock_itself_when_set_up_could_not_tell(tmp_path: Path) -> None:
    # the set-up check reads pytest internals; if they change, the fixture still refuses
    blind = "import trizmq.testing.plugin as plugin\nplugin._takes_mock_clock = lambda item: True\n"
    got = run_project(
        tmp_path / "project",
        "[pytest]\ntrio_mode = true\n",
        {"conftest.py": blind, "test_forgot_the_clock.py": without_clock(docs_example())},
    )
    outcome, message = got["test_forgot_the_clock"]
    assert outcome == "failure"  # inside the trio run, before the test body
    assert "add pytest-trio's autojump_clock fixture to the test's arguments" in message
