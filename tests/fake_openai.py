"""A fake OpenAI-compatible chat server on 127.0.0.1, speaking the real wire protocol (`/v1/chat/completions`),
for the tests (and benchmarks) of code that talks to a hosted LM."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeOpenAI(ThreadingHTTPServer):
    """/v1/chat/completions that plays a script of (status, delay) replies, then succeeds with `content`: a fixed
    text, or a function of the request's body."""

    daemon_threads = True

    def __init__(self, content: str | Callable[[dict], str]):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[tuple[int, float]] = []
        self.requests: list[dict] = []
        self.content = content
        self.html: str | None = None  # when set, a 200 reply is this page instead of JSON (a proxy's error page)
        self.delay = 0.0  # seconds before every unscripted reply: a provider's latency
        self.released = threading.Event()  # cuts a slow reply short at teardown
        self.in_flight = self.max_in_flight = 0  # requests being answered at once, and the most seen
        self.stream_chunk = 4  # characters per chunk of a streamed reply (a request with "stream": true)
        self.streamed = 0  # replies sent as streams
        self._count = threading.Lock()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def handle_error(self, request, client_address):
        pass  # the client hanging up on a slow reply is the point of the timeout test


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        server: FakeOpenAI = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.requests.append(body)
        status, delay = server.script.pop(0) if server.script else (200, server.delay)
        with server._count:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            if delay:
                server.released.wait(delay)
            self._reply(server, body, status)
        finally:
            with server._count:
                server.in_flight -= 1

    def _reply(self, server: FakeOpenAI, body: dict, status: int) -> None:
        if status == 200 and server.html is not None:
            self._send(status, server.html.encode(), "text/html")
            return
        if status == 200 and body.get("stream"):
            self._stream(server, body)
            return
        if status == 200:
            reply = {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": _content(server.content, body)},
                    }
                ],
                "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
            }
        else:
            # A careless provider echoing the credential back: the error must not repeat it.
            reply = {
                "error": {
                    "message": f"failed for {self.headers.get('Authorization')}",
                    "type": "server_error",
                }
            }
        self._send(status, json.dumps(reply).encode(), "application/json")

    def _stream(self, server: FakeOpenAI, body: dict) -> None:
        """A streamed reply as OpenAI sends it: server-sent events of `chat.completion.chunk`s, `stream_chunk`
        characters of content each, then `data: [DONE]`."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        content = _content(server.content, body)
        pieces = [content[i:i + server.stream_chunk] for i in range(0, len(content), server.stream_chunk)]
        deltas = [{"role": "assistant", "content": ""}, *({"content": piece} for piece in pieces), {}]
        for n, delta in enumerate(deltas):
            chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if n == len(deltas) - 1 else None}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")
        server.streamed += 1

    def _send(self, status: int, data: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Retry-After", "0")  # keeps DSPy's retries instant
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def _content(content: str | Callable[[dict], str], body: dict) -> str:
    return content(body) if callable(content) else content


@contextmanager
def serving(fake: FakeOpenAI):
    """Serve `fake` on a background thread for the duration of the block."""
    thread = threading.Thread(target=fake.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.released.set()
        fake.shutdown()
        fake.server_close()
        thread.join(timeout=5)
