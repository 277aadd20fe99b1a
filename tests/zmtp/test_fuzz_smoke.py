"""The atheris fuzzers (the ZMTP decoder, the ZWS codec, the compressed transports'
decoder) run, briefly, as part of the suite."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"


@pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None,
    reason="atheris is not importable, so the fuzz targets cannot run",
)
@pytest.mark.parametrize("target", ["fuzz_decoder.py", "fuzz_zws.py", "fuzz_compression.py"])
def test_fuzz_target_smoke(tmp_path: Path, target: str) -> None:
    result = subprocess.run(
        [sys.executable, str(FUZZ / target), "-runs=2000", "-seed=1", "-max_len=1024"],
        cwd=tmp_path,  # libFuzzer writes crash files to the working directory
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Done 2000 runs" in result.stderr
