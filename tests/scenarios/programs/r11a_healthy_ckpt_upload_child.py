"""Healthy control: after training, the final checkpoint is pushed to the model store by an
uploader child process (a stand-in for `huggingface-cli upload` / `aws s3 cp`, here a
rate-limited copy into a local "bucket" directory) that prints nothing until it finishes; the
script waits for it with `communicate()` and then prints the upload's summary. Exits 0.

Written from https://github.com/huggingface/transformers/issues/21116 ("PushToHubCallback is
hanging on the training completion"; it later ran through): the upload at the end of training
shows no progress bar, so the job looks stuck while the bytes go out. Here the wait is about
10 s, spent sleeping between chunks (network-bound, almost no CPU); the hang timeout of 30 s is
above that silent stretch.
"""

import os
import subprocess
import sys
import tempfile

import torch
from torch import nn

UPLOADER = r"""
import os, sys, time
src, dst = sys.argv[1], sys.argv[2]
with open(src, "rb") as f, open(dst, "wb") as out:
    while True:
        chunk = f.read(64 * 1024)
        if not chunk:
            break
        out.write(chunk)
        time.sleep(0.3)  # ~200 KB/s uplink
print(f"uploaded {os.path.getsize(dst)} bytes to {dst}")
"""


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(100):
        x = torch.randn(64, 512)
        loss = nn.functional.mse_loss(model(x), x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    work = tempfile.mkdtemp(prefix="r11a_upload_")
    ckpt = os.path.join(work, "final.pt")
    torch.save({"model": model.state_dict()}, ckpt)  # ~2 MB of weights
    bucket = os.path.join(work, "bucket")
    os.makedirs(bucket)
    print(f"uploading {os.path.getsize(ckpt)} bytes...", flush=True)
    up = subprocess.Popen([sys.executable, "-c", UPLOADER, ckpt, os.path.join(bucket, "final.pt")],
                          stdout=subprocess.PIPE, text=True)
    out, _ = up.communicate()
    print(out.strip(), f"(exit {up.returncode})", flush=True)


if __name__ == "__main__":
    main()
