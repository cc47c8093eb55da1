"""Training samples served over HTTP by a small in-process feature server.

From https://github.com/nschloe/tuna/issues/178 ("Server deadlocks after concurrent requests
(HTTPServer + HTTP/1.1 keep-alive)"). The script serves precomputed feature vectors from an
`http.server.HTTPServer` thread speaking HTTP/1.1, and each DataLoader worker keeps one
connection open to it for speed. The server handles one connection at a time, and stays on
the first worker's idle keep-alive connection; the second worker's request is never read.
"""

import json
import threading
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, HTTPServer

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

N_SAMPLES = 2048
FEATURES = 32
BATCH_SIZE = 32

_g = torch.Generator().manual_seed(0)
FEATURE_TABLE = torch.randn(N_SAMPLES, FEATURES, generator=_g)
LABEL_TABLE = (FEATURE_TABLE[:, :8].sum(dim=1) > 0).long()


class FeatureHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # HANG: keep-alive-protocol

    def do_GET(self):
        i = int(self.path.rsplit("/", 1)[-1])
        body = json.dumps({"x": FEATURE_TABLE[i].tolist(), "y": int(LABEL_TABLE[i])}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def start_feature_server():
    server = HTTPServer(("127.0.0.1", 0), FeatureHandler)  # HANG: single-threaded-server
    threading.Thread(target=server.serve_forever, name="feature-server", daemon=True).start()
    return server.server_address


class RemoteFeatureDataset(Dataset):
    def __init__(self, address):
        self.address = address
        self.conn = None

    def __len__(self):
        return N_SAMPLES

    def __getitem__(self, i):
        if self.conn is None:  # one persistent connection per worker
            self.conn = HTTPConnection(*self.address)
        self.conn.request("GET", f"/sample/{i}")
        resp = self.conn.getresponse()  # HANG: worker-getresponse
        item = json.loads(resp.read())
        return torch.tensor(item["x"]), item["y"]


def main():
    address = start_feature_server()
    print(f"feature server on {address[0]}:{address[1]}", flush=True)
    loader = DataLoader(
        RemoteFeatureDataset(address), batch_size=BATCH_SIZE, shuffle=True, num_workers=2
    )
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(3):
        for step, (x, y) in enumerate(loader):  # HANG: loader-next
            loss = loss_fn(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
