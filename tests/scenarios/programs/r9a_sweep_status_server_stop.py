"""Training job with a small HTTP control endpoint for a hyper-parameter sweep controller.

Written from https://github.com/ycm-core/ycmd/pull/1509 (the `/shutdown` handler of ycmd's
standard-library HTTP server has to call `server.shutdown()` from a separate thread: "If we
don't do it in a separate thread, we don't have the time to respond"), see also the socketserver
docs: shutdown() "must be called while serve_forever() is running in a different thread
otherwise it will deadlock". Here the `/stop` handler answers the controller, sets the stop flag
and then calls `self.server.shutdown()` itself, i.e. from the thread that runs serve_forever():
shutdown() waits for serve_forever() to return, which waits for the handler to return. The
training loop sees the flag, saves, and joins the server thread for a clean exit, for ever.
"""

import json
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import torch
from torch import nn

STATE = {"step": 0, "loss": float("nan")}
STOP = threading.Event()


class ControlHandler(BaseHTTPRequestHandler):
    def log_message(self, format, *args):  # keep the training log readable
        pass

    def _reply(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._reply(dict(STATE))

    def do_POST(self):
        if self.path == "/stop":
            self._reply({"stopping": True})
            STOP.set()
            self.server.shutdown()  # HANG: shutdown


def sweep_controller(url: str, budget: int) -> None:
    """Stand-in for the sweep controller: stop the trial once it used its step budget."""
    while True:
        time.sleep(0.5)
        with urllib.request.urlopen(url + "/status") as resp:
            status = json.load(resp)
        if status["step"] >= budget:
            urllib.request.urlopen(urllib.request.Request(url + "/stop", method="POST")).read()
            return


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    server = HTTPServer(("127.0.0.1", 0), ControlHandler)
    server_thread = threading.Thread(target=server.serve_forever, name="control-http")
    server_thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=sweep_controller, args=(url, 600), daemon=True).start()
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(4096, 32), torch.randn(4096, 1)
    step = 0
    while not STOP.is_set():
        i = (step * 64) % 4096
        loss = nn.functional.mse_loss(model(x[i : i + 64]), y[i : i + 64])
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        STATE.update(step=step, loss=loss.item())
        if step % 100 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(0.005)
    print(f"stop requested at step {step}; saving", flush=True)
    torch.save(model.state_dict(), "/tmp/r9a_sweep_trial.pt")
    server_thread.join()
    print("done", flush=True)


if __name__ == "__main__":
    main()
