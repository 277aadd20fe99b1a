"""examples/browser_dashboard.py in a real browser: headless Chromium loads the page,
whose JavaScript subscribes over ws:// (ZWS 2.0, no mechanism) and draws the readings.

Needs Debian's ``chromium`` (``make test`` installs it where it can: ``apt-get install
chromium``) and ``playwright-core`` from ``package.json`` (``npm ci``); without them the
test skips and says so. ``TRIZMQ_SCREENSHOT=path.png`` keeps the screenshot (the one in
docs/websocket.md was made so).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import trio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
from browser_dashboard import reading  # noqa: E402

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
NODE = shutil.which("node")
DRIVER = ROOT / "tests" / "browser" / "dashboard.js"

pytestmark = [
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(),
        reason="no Chromium: install Debian's with `apt-get install chromium` "
        "(make test does where it can), or set CHROMIUM to a Chromium binary",
    ),
    pytest.mark.skipif(
        NODE is None or not (ROOT / "node_modules" / "playwright-core").is_dir(),
        reason="node_modules/playwright-core is missing: run `npm ci` (make test does)",
    ),
]

READINGS = 12


async def test_the_dashboard_page_receives_and_draws_published_readings(tmp_path: Path) -> None:
    screenshot = tmp_path / "dashboard.png"
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            example = await nursery.start(run_example)
            assert example.stdout is not None
            line = b""
            while not line.endswith(b"\n"):
                chunk = await example.stdout.receive_some(1)
                assert chunk, "the example ended before printing its URL"
                line += chunk
            url = line.decode().split()[1]
            assert url.startswith("http://127.0.0.1:")
            driver = await trio.run_process(
                [NODE, str(DRIVER), url, str(screenshot), str(READINGS)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                cwd=ROOT,
            )
            example.send_signal(2)  # SIGINT: the example stops cleanly
            assert await example.wait() == 0
            nursery.cancel_scope.cancel()
    assert driver.returncode == 0, driver.stderr.decode()
    shown = json.loads(driver.stdout)
    assert shown["errors"] == []
    assert shown["status"] == "connected"
    assert shown["count"] >= READINGS
    # what the page shows is what the PUB published as that reading
    assert shown["value"] == reading(shown["seq"])
    assert shown["text"] == f"{reading(shown['seq']):.2f} %"
    assert shown["points"] == min(shown["count"], 64)
    data = screenshot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5_000
    keep = os.environ.get("TRIZMQ_SCREENSHOT")
    if keep:
        Path(keep).write_bytes(data)


async def run_example(task_status: trio.TaskStatus[trio.Process]) -> None:
    process = await trio.lowlevel.open_process(
        [sys.executable, str(ROOT / "examples" / "browser_dashboard.py"), "--interval", "0.05"],
        stdout=subprocess.PIPE,
    )
    try:
        task_status.started(process)
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
