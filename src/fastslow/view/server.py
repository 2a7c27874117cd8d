"""``fastslow view RUN [RUN ...]``: the trajectory viewer served on a loopback port (paper App. D/E logs).

A standard-library HTTP server: ``/`` is the page (``eval.viewer.page``: its script and style inline,
nothing fetched from elsewhere), and a small JSON API reads the run directories on demand
(``data.RunView``):

- ``/api/runs``: every run's summary (tables, store, warm-up, warnings);
- ``/api/runs/<i>/episodes``: run ``i``'s episode list (cached per log file, re-read when it changes);
- ``/api/runs/<i>/episodes/<episode_id>``: one episode with its steps and mechanism events;
- ``/api/attributions``: each attribution directory's result, its points linked to their fork runs.

The comparison views are computed in the page from those. Bound to 127.0.0.1 unless ``host`` names
another address: run logs hold prompts and paths, and the viewer is a local tool. A request is answered
only when its ``Host`` header names 127.0.0.1, localhost, [::1] or ``host`` (with the served port or
none), so a page of another site cannot read the answers through DNS rebinding; any other gets 403.
Every answer passes through ``fastslow.redact`` (no password a run was given is served), and a request
that fails gets a JSON error (a log with a line that is not an event: 422), never a dropped connection.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from fastslow.errors import CorruptLogError, UsageError
from fastslow.eval.viewer import page
from fastslow.redact import redact_data, redact_text
from fastslow.view.data import Attribution, RunView, open_runs

_EPISODES = re.compile(r"^/api/runs/(\d+)/episodes$")
_EPISODE = re.compile(r"^/api/runs/(\d+)/episodes/([A-Za-z0-9_.-]+)$")


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
"""``Host`` names always served (with the served port or none), whatever address is bound."""


def check_port(port: int) -> int:
    """``port`` if it is a TCP port number (0 picks a free one); ``UsageError`` otherwise."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port must be 0-65535 (0 picks a free port), got {port}")
    return port


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        runs: list[RunView],
        port: int = 0,
        host: str = "127.0.0.1",
        attributions: list[Attribution] | None = None,
    ) -> None:
        check_port(port)
        self.runs = runs
        self.attributions = attributions or []
        self.page = page()
        self.host = host
        if ":" in host:  # an IPv6 literal such as ::1
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _Handler)
        self.allowed_hosts = {*LOOPBACK_NAMES, _host_name(host)}

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{_host_name(self.host)}:{self.port}/"

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's ``Host`` header names this server: a loopback name or the bound host,
        with the served port or without one (case-insensitive). A missing header is refused."""
        if not header:
            return False
        name, port = _split_host(header.strip().lower())
        if port is not None and port != str(self.port):
            return False
        return name in {h.lower() for h in self.allowed_hosts}


def _host_name(host: str) -> str:
    """A host as a URL and a ``Host`` header write it: an IPv6 literal in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _split_host(header: str) -> tuple[str, str | None]:
    """``Host`` header -> (name, port or None): ``[::1]:80`` -> (``[::1]``, ``80``), ``localhost`` ->
    (``localhost``, None). Anything else after an IPv6 literal's ``]`` stays in the name (refused)."""
    if header.startswith("[") and "]:" in header:
        name, port = header.rsplit(":", 1)
        return name, port
    if header.startswith("[") or ":" not in header:
        return header, None
    name, port = header.rsplit(":", 1)
    return name, port


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # one line per request would bury the URL the user needs

    def do_GET(self) -> None:
        try:
            if not self.server.host_allowed(self.headers.get("Host")):
                # DNS rebinding: a page of another site reaching this port under its own name.
                self._error(HTTPStatus.FORBIDDEN, "this viewer answers only requests for its own host")
                return
            self._route(unquote(urlsplit(self.path).path))
        except (BrokenPipeError, ConnectionResetError):
            return  # the browser went away mid-answer
        except CorruptLogError as exc:
            self._error(HTTPStatus.UNPROCESSABLE_ENTITY, str(exc))
        except Exception as exc:  # one request's failure must not drop the connection or the server
            message = f"{type(exc).__name__}: {exc}"
            print(redact_text(f"fastslow view: {self.path}: {message}"), file=sys.stderr)
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, message)

    def _route(self, path: str) -> None:
        runs = self.server.runs
        if path in ("/", "/index.html"):
            self._send(HTTPStatus.OK, self.server.page.encode(), "text/html; charset=utf-8")
            return
        if path == "/api/runs":
            self._json([r.summary() for r in runs])
            return
        if path == "/api/attributions":
            self._json([a.summary() for a in self.server.attributions])
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

    def _json(self, value: Any) -> None:
        body = json.dumps(redact_data(value), ensure_ascii=False).encode()
        self._send(HTTPStatus.OK, body, "application/json")

    def _missing(self, why: str) -> None:
        self._error(HTTPStatus.NOT_FOUND, why)

    def _error(self, status: HTTPStatus, why: str) -> None:
        body = json.dumps(redact_data({"error": why}), ensure_ascii=False).encode()
        self._send(status, body, "application/json")

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
    if len(index) > 9:  # no run list is that long (and int() refuses thousands of digits)
        return None
    i = int(index)
    return runs[i] if 0 <= i < len(runs) else None


def serve(paths: list[Path], port: int = 0, host: str = "127.0.0.1") -> ViewerServer:
    """A started viewer over ``paths`` (served from a daemon thread) on ``host``; ``UsageError`` for a
    port outside 0-65535 (checked before anything is read) or a directory that is not a finished run.
    ``port`` 0 picks a free one (``server.url`` says which)."""
    check_port(port)
    runs, attributions = open_runs(paths)
    server = ViewerServer(runs, port, host, attributions)
    threading.Thread(target=server.serve_forever, daemon=True, name="fastslow-view").start()
    return server
