"""Training reads its samples from a small feature server that runs in a thread of the trainer
itself (a stand-in for a local cache daemon / data-lake proxy) over loopback TCP.

Written from https://github.com/pytorch/pytorch/issues/33296 ("Training got stuck due to
timeout from dataloader": DataLoader workers fetch their training data over a connection to a
remote store; when that connection stops answering the workers sit in the socket read and the
main loop waits for a batch forever; no timeout was set). Here the server is serial: it serves
one client connection until that client hangs up. The trainer opens a "control" connection to
ask for the dataset size and keeps it open to report statistics later, so the server never
returns to accept(); the DataLoader workers' connections are queued in the listen backlog,
their requests are never read, and each worker blocks in recv() with no timeout. The training
loop waits for the first batch with the DataLoader's default timeout=0 (i.e. forever).
"""

import json
import os
import socket
import struct
import threading

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

FEATURES = 16


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))  # HANG: recv
        if not chunk:
            raise ConnectionError("feature server closed the connection")
        data += chunk
    return data


def serve(listener: socket.socket, table: torch.Tensor) -> None:
    """Serial request loop: one client at a time, until that client disconnects."""
    while True:
        conn, _ = listener.accept()
        with conn:
            while True:
                header = conn.recv(4)  # HANG: serial-server
                if len(header) < 4:
                    break
                (length,) = struct.unpack("!I", header)
                request = json.loads(recv_exact(conn, length))
                if request["op"] == "len":
                    body = json.dumps({"len": table.shape[0]}).encode()
                else:
                    body = table[request["index"]].numpy().tobytes()
                conn.sendall(struct.pack("!I", len(body)) + body)


def call(sock: socket.socket, request: dict) -> bytes:
    payload = json.dumps(request).encode()
    sock.sendall(struct.pack("!I", len(payload)) + payload)
    (length,) = struct.unpack("!I", recv_exact(sock, 4))
    return recv_exact(sock, length)


class RemoteFeatures(Dataset):
    def __init__(self, address, length: int):
        self.address = address
        self.length = length
        self.sock = None  # opened lazily, once per worker process

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int):
        if self.sock is None:
            self.sock = socket.create_connection(self.address)
        raw = call(self.sock, {"op": "get", "index": index})
        row = torch.frombuffer(bytearray(raw), dtype=torch.float32)
        return row[:FEATURES], row[FEATURES:]


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    table = torch.randn(512, FEATURES + 1)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    threading.Thread(target=serve, args=(listener, table), daemon=True).start()
    address = listener.getsockname()

    # Quick sanity fit on an in-memory slice before switching to the served data.
    model = nn.Sequential(nn.Linear(FEATURES, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    warm = table[:64]
    for _step in range(5):
        loss = nn.functional.mse_loss(model(warm[:, :FEATURES]), warm[:, FEATURES:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"warm-up loss {loss.item():.4f}", flush=True)

    control = socket.create_connection(address)  # HANG: kept-open
    length = json.loads(call(control, {"op": "len"}))["len"]
    print(f"feature server reports {length} rows; control link kept for stats", flush=True)

    loader = DataLoader(RemoteFeatures(address, length), batch_size=32, shuffle=True,
                        num_workers=2)
    for epoch in range(2):
        for step, (x, y) in enumerate(loader):  # HANG: next-batch
            loss = nn.functional.mse_loss(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
        call(control, {"op": "len"})
    control.close()
    print(f"done (pid {os.getpid()})", flush=True)


if __name__ == "__main__":
    main()
