"""Reward-model scoring through a local HTTP server thread, on a keep-alive connection.

Written from https://github.com/huggingface/trl/issues/6973 (the training client sends its
HTTP requests without a timeout, so a server that accepts the request and never finishes the
response hangs training). Here a frozen reward model is served by an `HTTPServer` thread whose
handler declares HTTP/1.1 for keep-alive but writes its JSON body without a Content-Length
(the pitfall of https://github.com/prometheus/client_python/issues/299). The start-up health
check passes (urllib asks the server to close), but the policy loop's persistent
`http.client` connection waits in `resp.read()` for an end of body that never comes.
"""

import http.client
import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer

import torch
import torch.nn as nn

WARMUP_STEPS = 8
RL_STEPS = 20
DIM = 32

torch.manual_seed(0)
REWARD_MODEL = nn.Sequential(nn.Linear(DIM, 64), nn.Tanh(), nn.Linear(64, 1)).eval()


class RewardHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # HANG: no-content-length

    def log_message(self, fmt, *args):
        pass

    def _reply(self, payload):
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()  # HANG: no-content-length
        self.wfile.write(body)

    def do_GET(self):
        self._reply({"status": "ok"})

    def do_POST(self):
        n = int(self.headers["Content-Length"])
        samples = torch.tensor(json.loads(self.rfile.read(n))["samples"])
        with torch.no_grad():
            rewards = REWARD_MODEL(samples).squeeze(-1).tolist()
        self._reply({"rewards": rewards})


def start_reward_server():
    server = HTTPServer(("127.0.0.1", 0), RewardHandler)
    threading.Thread(target=server.serve_forever, name="reward-server", daemon=True).start()
    return server.server_address


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.mu = nn.Sequential(nn.Linear(DIM, 64), nn.ReLU(), nn.Linear(64, DIM))
        self.log_std = nn.Parameter(torch.zeros(DIM))

    def forward(self, obs):
        return torch.distributions.Normal(self.mu(obs), self.log_std.exp())


def main():
    host, port = start_reward_server()
    with urllib.request.urlopen(f"http://{host}:{port}/health") as r:
        print("reward server health:", json.loads(r.read()), flush=True)

    policy = Policy()
    opt = torch.optim.Adam(policy.parameters(), lr=1e-3)
    # supervised warm-up towards a reference action
    for step in range(1, WARMUP_STEPS + 1):
        obs = torch.randn(64, DIM)
        loss = nn.functional.mse_loss(policy(obs).mean, obs.flip(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"warmup step {step} loss {loss.item():.4f}", flush=True)

    conn = http.client.HTTPConnection(host, port)  # keep-alive, reused for every batch
    for step in range(1, RL_STEPS + 1):
        obs = torch.randn(64, DIM)
        dist = policy(obs)
        actions = dist.sample()
        conn.request(
            "POST",
            "/score",
            body=json.dumps({"samples": actions.tolist()}),
            headers={"Content-Type": "application/json"},
        )
        resp = conn.getresponse()
        rewards = torch.tensor(json.loads(resp.read())["rewards"])  # HANG: read-body
        adv = rewards - rewards.mean()
        loss = -(dist.log_prob(actions).sum(-1) * adv).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rl step {step} loss {loss.item():.4f} reward {rewards.mean():.4f}", flush=True)
    conn.close()


if __name__ == "__main__":
    main()
