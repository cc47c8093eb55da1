"""Training job that ships its metrics to a local sidecar process over loopback TCP.

Written from https://github.com/mjcaley/aiospamc/issues/233 ("Messages not ending with a
newline might cause the connection to hang ... waiting for a response"): the sidecar reads one
JSON record per line (`rfile.readline()`) and acknowledges each with "ok\\n"; the uploader sends
`json.dumps(record)` without the trailing newline and waits for the acknowledgement. The
sidecar waits for the end of the line, the uploader waits for the ack, neither has a timeout.
Uploads go through a one-thread executor so that training does not wait for them, but before
each checkpoint the trainer flushes the pending uploads, and that flush never returns.
"""

import json
import socket
import socketserver
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, wait

import torch
from torch import nn


class MetricsHandler(socketserver.StreamRequestHandler):
    def handle(self):
        with open("/tmp/r9a_sidecar_metrics.jsonl", "a") as sink:
            while line := self.rfile.readline():
                sink.write(line.decode())
                self.wfile.write(b"ok\n")


def run_sidecar() -> None:
    with socketserver.TCPServer(("127.0.0.1", 0), MetricsHandler) as server:
        print(server.server_address[1], flush=True)
        server.serve_forever()


class MetricsClient:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))

    def push(self, record: dict) -> None:
        self.sock.sendall(json.dumps(record).encode())  # HANG: no-newline
        if self.sock.recv(16) != b"ok\n":  # HANG: recv
            raise RuntimeError("metrics sidecar refused the record")


def main() -> None:
    sidecar = subprocess.Popen([sys.executable, __file__, "--sidecar"], stdout=subprocess.PIPE)
    client = MetricsClient(int(sidecar.stdout.readline()))
    uploader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metrics-upload")
    pending = []
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 4))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x, y = torch.randn(8192, 20), torch.randint(0, 4, (8192,))
    for step in range(1, 1001):
        i = (step * 128) % 8192
        loss = nn.functional.cross_entropy(model(x[i : i + 128]), y[i : i + 128])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            pending.append(uploader.submit(client.push, {"step": step, "loss": loss.item()}))
        if step % 50 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step % 200 == 0:
            wait(pending)  # make sure the metrics are stored before checkpointing
            pending.clear()
            torch.save(model.state_dict(), f"/tmp/r9a_sidecar_step{step}.pt")
            print(f"checkpoint at step {step}", flush=True)
    uploader.shutdown()
    print("done", flush=True)


if __name__ == "__main__":
    if "--sidecar" in sys.argv:
        run_sidecar()
    else:
        main()
