"""``fastslow view RUN [RUN ...]``: the trajectory viewer served on a loopback port (paper App. D/E logs).

A standard-library HTTP server: ``/`` is the page (``eval.viewer.page``: its script and style inline,
nothing fetched from elsewhere), and a small JSON API reads the run directories on demand
(``data.RunView``):

- ``/api/runs``: every run's summary (tables, store, warm-up, warnings);
- ``/api/runs/<i>/episodes``: run ``i``'s episode list (cached per log file, re-read when it changes);
- ``/api/runs/<i>/episodes/<episode_id>``: one episode with its steps and mechanism events.

The comparison views are computed in the page from those. Bound to 127.0.0.1 only: run logs hold
prompts and paths, and the viewer is a local tool.
"""

from __future__ import annotations

import json
import re
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from fastslow.eval.viewer import page
from fastslow.view.data import RunView, open_runs

_EPISODES = re.compile(r"^/api/runs/(\d+)/episodes$")
_EPISODE = re.compile(r"^/api/runs/(\d+)/episodes/([A-Za-z0-9_.-]+)$")


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, runs: list[RunView], port: int = 0) -> None:
        self.runs = runs
        self.page = page()
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # one line per request would bury the URL the user needs

    def do_GET(self) -> None:
        path = unquote(urlsplit(self.path).path)
        runs = self.server.runs
        try:
            if path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, self.server.page.encode(), "text/html; charset=utf-8")
                return
            if path == "/api/runs":
                self._json([r.summary() for r in runs])
                return
            if m := _EPISODES.match(path):
                run = _run(runs, m.group(1))
                self._json(run.episodes()) if run else self._missing("no such run")
                return
            if m := _EPISODE.match(path):
                run = _run(runs, m.group(1))
                episode = run.episode(m.group(2)) if run else None
                self._json(episode) if episode else self._missing("no such episode")
                return
            self._missing("not found")
        except (BrokenPipeError, ConnectionResetError):
            return  # the browser went away mid-answer

    def _json(self, value: Any) -> None:
        self._send(HTTPStatus.OK, json.dumps(value, ensure_ascii=False).encode(), "application/json")

    def _missing(self, why: str) -> None:
        self._send(HTTPStatus.NOT_FOUND, json.dumps({"error": why}).encode(), "application/json")

    def _send(self, status: HTTPStatus, body: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        # The page only ever talks to this server; it loads nothing from anywhere else.
        self.send_header(
            "Content-Security-Policy",
            "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:",
        )
        self.end_headers()
        self.wfile.write(body)


def _run(runs: list[RunView], index: str) -> RunView | None:
    i = int(index)
    return runs[i] if 0 <= i < len(runs) else None


def serve(paths: list[Path], port: int = 0) -> ViewerServer:
    """A started viewer over ``paths`` (served from a daemon thread); ``UsageError`` for a directory
    that is not a finished run. ``port`` 0 picks a free one (``server.url`` says which)."""
    server = ViewerServer(open_runs(paths), port)
    threading.Thread(target=server.serve_forever, daemon=True, name="fastslow-view").start()
    return server
