"""Ship the training log to a local collector through a bounded queue and a shipper thread.

From https://github.com/release-engineering/kobo/pull/257 ("fix deadlock when LoggingThread
wrote into its own Queue"). A logging handler puts every record on a bounded queue that a daemon
thread drains, sending each line to a collector child process over a socket. When the collector
goes away the shipper logs the error through the same logger: its record goes to the handler,
whose lock the training thread holds while it waits for room in the full queue that only the
shipper empties.
"""

import logging
import queue
import socket
import subprocess
import sys
import threading

import torch
from torch import nn

STEPS = 5000
QUEUE_SIZE = 64

# A tiny line collector (stands in for a fluent-bit/vector sidecar): acks each line, and
# restarts (exits) after 300 lines.
COLLECTOR = r"""
import socket, sys, time
srv = socket.socket()
srv.bind(("127.0.0.1", 0))
srv.listen(1)
print(srv.getsockname()[1], flush=True)
conn, _ = srv.accept()
f = conn.makefile("rwb")
for n in range(300):
    if not f.readline():
        break
    time.sleep(0.002)
    f.write(b"ok\n")
    f.flush()
conn.close()
"""

log = logging.getLogger("train")


class QueueShipHandler(logging.Handler):
    def __init__(self, q):
        super().__init__()
        self.q = q

    def emit(self, record):
        self.q.put(self.format(record))  # HANG: handler-put


class Shipper(threading.Thread):
    def __init__(self, q, port):
        super().__init__(name="log-shipper", daemon=True)
        self.q = q
        self.port = port
        self.sock = None

    def connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port))
        self.f = self.sock.makefile("rwb")

    def send(self, line):
        if self.sock is None:
            self.connect()
        self.f.write(line.encode() + b"\n")
        self.f.flush()
        if self.f.readline() != b"ok\n":
            self.sock = None
            raise ConnectionError(f"collector on port {self.port} closed the connection")

    def run(self):
        while True:
            line = self.q.get()
            try:
                self.send(line)
            except OSError as exc:
                log.warning("log shipping failed, will retry: %s", exc)  # HANG: log-in-shipper


def main():
    collector = subprocess.Popen([sys.executable, "-c", COLLECTOR], stdout=subprocess.PIPE)
    port = int(collector.stdout.readline())

    q = queue.Queue(maxsize=QUEUE_SIZE)
    handler = QueueShipHandler(q)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    Shipper(q, port).start()

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(STEPS):
        x = torch.randn(32, 16)
        y = x.sum(dim=1, keepdim=True)
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        log.info("step=%d loss=%.5f lr=%.4f", step, loss.item(), 0.01)  # HANG: main-log
    collector.wait()
    print("training done", flush=True)


if __name__ == "__main__":
    main()
