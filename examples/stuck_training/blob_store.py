"""A tiny local stand-in for a remote blob store. One of its requests never gets an answer,
as happens when a storage node hangs: the connection stays open and nothing comes back."""

from __future__ import annotations

import io
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

never = threading.Event()


def start_blob_store(stall_at: int) -> str:
    """Serve samples on a loopback port in daemon threads; return the base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            index = int(self.path.rsplit("/", 1)[-1])
            if index == stall_at:
                never.wait()  # the hung storage node
            generator = torch.Generator().manual_seed(index)
            image = torch.randn(3, 16, 16, generator=generator)
            buffer = io.BytesIO()
            torch.save((image, index % 10), buffer)
            body = buffer.getvalue()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}"
