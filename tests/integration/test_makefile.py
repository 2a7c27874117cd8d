"""`make paper` and `make paper-sensitivity` with no model server: one clear line, a non-zero exit, and
nothing written (the README's promise for the paper's setup). The recipes run for real against this
environment's fastslow; only the install prerequisites are taken as done (``make -o``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("target", ["paper", "paper-sensitivity"])
def test_paper_targets_fail_before_writing_anything_without_a_server(target: str, tmp_path: Path) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = Path(sys.prefix)
    if not (venv / "bin" / "fastslow").exists():
        pytest.skip("fastslow is not installed as a console script in this environment")
    out = tmp_path / "paper"
    stamps = [venv / ".fastslow-installed", venv / ".fastslow-dev-installed"]
    # The paper configs name 127.0.0.1:8000; nothing of this test listens there, but a developer's
    # own vLLM might: the check is then about whatever answers, so skip rather than run 271 episodes.
    import socket

    with socket.socket() as s:
        s.settimeout(0.5)
        if s.connect_ex(("127.0.0.1", 8000)) == 0:
            pytest.skip("something listens on 127.0.0.1:8000 (a model server): not the case under test")
    pytest.importorskip("torch")
    from integration.tiny_t5 import tiny_t5

    # The Flan-T5 checkpoint is checked before the server: a tiny one stands in for it.
    checkpoint = tiny_t5(["look", "around"], tmp_path / "swift_t5")
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), target, f"VENV={venv}", f"PAPER_OUT={out}"]
    cmd.append(f"PAPER_ARGS=-o swift.model_path={checkpoint}")
    for stamp in [*stamps, "install-dev", "install"]:
        cmd += ["-o", str(stamp)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stdout[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, done.stderr[-2000:]
    assert "127.0.0.1:8000" in errors[0], done.stderr[-2000:]
    assert not out.exists(), "a failed start wrote into the output directory"
