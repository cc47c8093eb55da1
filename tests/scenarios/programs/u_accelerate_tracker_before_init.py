"""An accelerate script that registers the run with its experiment tracker from the main
process before creating the Accelerator (so that the run id can go into the output path). The
tracker accepts the connection but never answers and the request has no timeout: the main
process never reaches the rendezvous, and the other process waits for it in
`Accelerator()` forever.

Written from https://github.com/s-JoL/Open-Llama/issues/47 (an `accelerate launch` job stuck at
start-up in "Waiting in store based barrier to initialize process group ... worker_count=7" of
8; disabling wandb fixed it). Mechanism: a peer that never joins the rendezvous.
"""

import json
import os
import socket
import urllib.request

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, TensorDataset
from transformers import GPT2Config, GPT2LMHeadModel


def register_run(tracker_url: str) -> str:
    request = urllib.request.Request(f"{tracker_url}/api/runs", method="POST",
                                     data=json.dumps({"project": "gpt2-tiny"}).encode())
    with urllib.request.urlopen(request) as response:  # HANG: tracker
        return json.load(response)["id"]


def main() -> None:
    run_id = "local"
    if int(os.environ.get("LOCAL_RANK", "0")) == 0:
        tracker = socket.socket()
        tracker.bind(("127.0.0.1", 0))
        tracker.listen(8)  # the tracking server: it accepts, it never answers
        run_id = register_run(f"http://127.0.0.1:{tracker.getsockname()[1]}")
    accelerator = Accelerator()
    model = GPT2LMHeadModel(GPT2Config(vocab_size=128, n_positions=32, n_embd=32, n_layer=1,
                                       n_head=2))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 128, (256, 32), generator=torch.Generator().manual_seed(0))
    loader = DataLoader(TensorDataset(tokens), batch_size=8)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for step, (input_ids,) in enumerate(loader):
        loss = model(input_ids=input_ids, labels=input_ids).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        accelerator.print(f"run {run_id} step {step} loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
