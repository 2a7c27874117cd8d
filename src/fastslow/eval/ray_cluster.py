"""``--ray-address``: is there a Ray cluster to join? Asked before a run writes anything.

``ray.init(address=...)`` does not fail fast: with no cluster on ``auto`` it raises only after the run
files are written (``eval`` checks options first, then claims DIR), and on a HOST:PORT where nothing
answers it retries for minutes. ``check_ray_cluster`` answers in bounded time instead: a TCP connection
to HOST:PORT (refused at once when nothing listens), then ``ray.init`` itself in a child process that is
killed after ``PROBE_S`` seconds (a port that accepts but is not Ray's, a version mismatch, ``auto``
finding no cluster). Either failure is one ``UsageError`` line.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys

from fastslow.errors import UsageError

CONNECT_S = 5.0
"""Longest wait for the TCP connection to HOST:PORT."""
PROBE_S = 45.0
"""Longest wait for ``ray.init`` to join the cluster in the child process (importing Ray and joining a
healthy cluster takes a few seconds; a loaded machine may need several times that)."""

_PROBE = """
import logging, sys
try:
    import ray
    ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    ray.shutdown()
except BaseException as exc:
    why = " ".join(str(exc).split())
    cause = exc.__cause__
    if cause is not None:  # ray.init's ConnectionError wraps the reason (an auth error, a timeout)
        why += " (" + type(cause).__name__ + ": " + " ".join(str(cause).split())[:200] + ")"
    print("fastslow-probe-error", type(exc).__name__, why, flush=True)
    sys.exit(1)
"""
_MARK = "fastslow-probe-error"


def _host_port(address: str) -> tuple[str, int] | None:
    """HOST and PORT of ``[ray://]HOST:PORT`` (``[::1]:6379`` for IPv6); None for ``auto``/``local``;
    ``UsageError`` for anything else."""
    if address in ("auto", "local"):
        return None
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--ray-address {address}: give auto or HOST:PORT (e.g. 10.0.0.5:6379)")
    return host, int(port)


def check_ray_cluster(address: str, probe_s: float = PROBE_S, connect_s: float = CONNECT_S) -> None:
    """Return once a Ray cluster at ``address`` (``auto``, ``HOST:PORT`` or ``ray://HOST:PORT``) can be
    joined; otherwise one ``UsageError`` line saying why, within ``connect_s + probe_s`` seconds. Starts
    nothing on the cluster but a driver that disconnects at once; ``local`` (start a private instance,
    as without ``--ray-address``) is not probed. Reads and writes no file of the run."""
    target = _host_port(address)
    if address == "local":
        return
    if target is not None:
        try:
            socket.create_connection(target, timeout=connect_s).close()
        except OSError as exc:
            why = "timed out" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
            raise UsageError(f"--ray-address {address}: no Ray cluster answers there ({why})") from None
    # A child process: ray.init cannot be interrupted, and a driver that joined stays joined until
    # its process ends. Its own session, so that whatever it started ends with it on a timeout.
    child = subprocess.Popen(
        [sys.executable, "-c", _PROBE, address],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = child.communicate(timeout=probe_s)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        raise UsageError(
            f"--ray-address {address}: no Ray cluster answered within {probe_s:.0f} s (is it a Ray "
            "head node's GCS address, and the same Ray version?)"
        ) from None
    if child.returncode == 0:
        return
    line = next((ln for ln in out.splitlines() if ln.startswith(_MARK)), "")
    kind, _, message = line.removeprefix(_MARK).strip().partition(" ")
    if kind == "ConnectionError" and address == "auto":
        raise UsageError(
            "--ray-address auto: no running Ray cluster found on this machine (start one with "
            "`ray start --head`, set RAY_ADDRESS, or give HOST:PORT)"
        )
    why = f"{kind}: {message}" if kind else f"exit code {child.returncode}"
    raise UsageError(f"--ray-address {address}: cannot join the Ray cluster ({why})")
