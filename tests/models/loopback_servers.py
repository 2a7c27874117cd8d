"""Real loopback servers for the openai backend's failure paths (paper §3 and §4: Sage and the Critic call
an OpenAI-compatible server): a listener that never answers, and an HTTP server that answers each request
with exactly the status, content type and body a test gives it (or holds it unanswered: ``HANG``).
Fixtures are in conftest.py."""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class SilentServer:
    """A TCP listener that accepts connections and never sends a byte (a hung server or proxy)."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.1)  # so the accept loop notices close() promptly
        self.connections: list[socket.socket] = []
        """Every connection accepted, held open: one per request attempt the client made."""
        self.base_url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept_forever, daemon=True)
        self._thread.start()

    def _accept_forever(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections.append(conn)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for conn in self.connections:
            conn.close()
        self.listener.close()


@dataclass(frozen=True)
class Answer:
    """One HTTP answer: status, Content-Type and body, sent as given."""

    body: str
    content_type: str = "application/json"
    status: int = 200
    hang: bool = False
    """Send nothing: hold the request open until the server closes (a server hung mid-run)."""


HANG = Answer("", hang=True)
"""A chat request the server reads and never answers."""


def completion_json(text: str | None, usage: dict[str, int] | None = None) -> Answer:
    """A well-formed chat completion (the OpenAI shape vLLM and llama.cpp's server send)."""
    body: dict[str, object] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "canned",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if usage is not None:
        body["usage"] = usage
    return Answer(json.dumps(body))


MODEL_LIST = Answer(json.dumps({"object": "list", "data": [{"id": "canned", "object": "model"}]}))
"""A well-formed GET /v1/models answer listing the model ``canned``."""


class CannedServer:
    """Answers POST /v1/chat/completions with ``chat`` answers in order (the last one repeats) and
    GET /v1/models with ``models``; records every request path and POST body."""

    def __init__(self, chat: list[Answer], models: Answer = MODEL_LIST) -> None:
        self.chat = chat
        self.models = models
        self.requests: list[str] = []
        self.bodies: list[dict[str, object]] = []
        """The JSON body of every POST, in order (what the client actually sent)."""
        self.closing = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(f"GET {self.path}")
                self._send(server.models if self.path.endswith("/models") else Answer("", status=404))

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.bodies.append(json.loads(raw or b"{}"))
                posts = sum(r.startswith("POST") for r in server.requests)
                server.requests.append(f"POST {self.path}")
                self._send(server.chat[min(posts, len(server.chat) - 1)])

            def _send(self, answer: Answer) -> None:
                if answer.hang:
                    server.closing.wait()
                    return
                payload = answer.body.encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, format: str, *args: object) -> None:  # keep test output clean
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def posts(self) -> int:
        return sum(r == "POST /v1/chat/completions" for r in self.requests)

    def close(self) -> None:
        self.closing.set()
        self.server.shutdown()
        self.server.server_close()
