"""Training exposes a tiny HTTP status page (current step, last loss) so that a person can
check on it with curl. The server runs `serve_forever()` in a background thread.

Written from https://github.com/bats3c/shad0w/issues/39 (and its fix, PR #40, "Make http
server daemon thread to allow cleaner exit"): the program's work was done but the process
never exited, stuck in threading's lock acquire at shutdown, because the HTTP server thread
was not a daemon and nothing ever called `shutdown()` on it. Here training finishes, the final
checkpoint is written and main() returns; the interpreter then waits in threading._shutdown()
for the non-daemon status thread, which keeps serving forever.
"""

import http.server
import json
import os
import tempfile
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

STATUS = {"step": 0, "loss": None}


class StatusHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps(STATUS).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def start_status_server() -> http.server.HTTPServer:
    server = http.server.HTTPServer(("127.0.0.1", 0), StatusHandler)
    thread = threading.Thread(target=server.serve_forever, name="status-http")  # HANG: non-daemon
    thread.start()
    print(f"status page on http://127.0.0.1:{server.server_address[1]}/", flush=True)
    return server


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    start_status_server()  # the handle is dropped: nobody calls shutdown()

    x = torch.randn(1024, 20)
    y = (x[:, :5].sum(dim=1, keepdim=True) > 0).float()
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    step = 0
    for epoch in range(3):
        for xb, yb in loader:
            loss = nn.functional.binary_cross_entropy_with_logits(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            STATUS.update(step=step, loss=round(loss.item(), 4))
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)

    out_dir = tempfile.mkdtemp(prefix="r7b_dash_")
    torch.save(model.state_dict(), os.path.join(out_dir, "final.pt"))
    print(f"training finished, saved {out_dir}/final.pt", flush=True)


if __name__ == "__main__":
    main()  # HANG: exit
