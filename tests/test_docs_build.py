"""The documentation site builds in strict mode (docs/conf.py, Sphinx with MyST).

Strict means ``-W --keep-going -n``: every warning is an error, and every
cross-reference must resolve. That refuses a link to a page or heading that does not
exist, a reference to a trizmq name that does not exist, a page left out of the
navigation, a docstring that does not parse, and (conf.py's own check) a public name
of ``trizmq`` or ``trizmq.testing``, or a public method of one, without a docstring.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest

import trizmq
import trizmq.testing

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: a bound against a hung build, not a budget: how fast it builds is no test's business
#: (it took 91 s once on two loaded cores)
TIMEOUT = 600.0


def build(source: Path, out: Path) -> tuple[int, str, float]:
    cmd = [sys.executable, "-m", "sphinx", "-E", "-W", "--keep-going", "-n", "-q",
           "-b", "html", "-d", str(out / "doctrees"), str(source), str(out / "html")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, env=env,
                          cwd=source.parent)
    return proc.returncode, proc.stdout + proc.stderr, time.monotonic() - started


def test_the_docs_build_strictly(tmp_path: Path) -> None:
    returncode, output, _elapsed = build(DOCS, tmp_path)
    assert returncode == 0, f"the docs build failed:\n{output}"
    html = tmp_path / "html"
    for page in DOCS.glob("*.md"):
        if page.stem != "README":
            assert (html / f"{page.stem}.html").exists(), f"{page.name} was not built"
    api = (html / "api.html").read_text(encoding="utf-8")
    for module in (trizmq, trizmq.testing):
        for name in module.__all__:
            assert f'id="{module.__name__}.{name}"' in api, (
                f"{module.__name__}.{name} is missing from the API reference")


def test_the_strict_build_refuses_broken_links_and_references(tmp_path: Path) -> None:
    source = tmp_path / "docs"
    shutil.copytree(DOCS, source, ignore=shutil.ignore_patterns("_build"))
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    # a new page, not named anywhere in conf.py: the navigation must pick it up
    (source / "zz-new-page.md").write_text(
        "# A new page\n\n"
        "[a page](no-such-page.md), [a heading](pair.md#no-such-heading),\n"
        "[an anchor](#nowhere), [a file](../examples/no_such_example.py),\n"
        "{py:class}`trizmq.NoSuchSocket`, {py:func}`trizmq.testing.no_such_function`.\n",
        encoding="utf-8",
    )
    returncode, output, _ = build(source, tmp_path / "out")
    assert returncode != 0
    for expected in ["no-such-page.md", "no-such-heading", "nowhere", "no_such_example.py",
                     "trizmq.NoSuchSocket", "trizmq.testing.no_such_function"]:
        assert expected in output, f"{expected!r} was not reported:\n{output}"
    assert "isn't included in any toctree" not in output, output


def load_conf() -> ModuleType:
    spec = importlib.util.spec_from_file_location("trizmq_docs_conf", DOCS / "conf.py")
    assert spec is not None and spec.loader is not None
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    return conf


def test_every_public_name_has_a_docstring() -> None:
    assert load_conf().missing_docstrings() == []


def test_a_missing_docstring_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def undocumented() -> None:
        pass

    class Documented:
        """A class whose method is not documented."""

        def method(self) -> None:
            pass

        def _private(self) -> None:
            pass

    for obj in (undocumented, Documented):
        obj.__module__ = "trizmq.testing._fake"
    monkeypatch.setattr(trizmq.testing, "undocumented", undocumented, raising=False)
    monkeypatch.setattr(trizmq.testing, "Documented", Documented, raising=False)
    monkeypatch.setattr(trizmq.testing, "__all__",
                        [*trizmq.testing.__all__, "undocumented", "Documented"])
    assert load_conf().missing_docstrings() == [
        "trizmq.testing.undocumented",
        "trizmq.testing.Documented.method",
    ]
