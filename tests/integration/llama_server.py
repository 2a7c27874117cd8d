"""llama.cpp's real OpenAI-compatible server (`python -m llama_cpp.server`) on the embedded GGUF, on a
free loopback port: what tests use in place of vLLM."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fastslow.models.local_backend import default_gguf

SERVED_MODEL = "smollm2"
"""Alias the test server publishes in /v1/models."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_llama(log_dir: Path, n_ctx: int = 1024) -> Iterator[str]:
    """Start the server (one thread), wait until /v1/models answers, yield its base URL, stop it."""
    port = free_port()
    log_path = log_dir / "server.log"
    cmd = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(default_gguf()), "--model_alias", SERVED_MODEL,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", "1", "--n_threads_batch", "1",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"llama_cpp.server exited with {proc.returncode}:\n{log_path.read_text()[-2000:]}"
                )
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=1) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer within 60 s:\n{log_path.read_text()[-2000:]}")
            time.sleep(0.2)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
