"""Keyword-spotting training on short waveform clips read by four DataLoader workers through a
clip-reading helper shared with the project's command-line tools.

Written from https://github.com/pytorch/pytorch/issues/5301 ("DataLoader worker (pid N) exited
unexpectedly with exit code 1 ... Is there some sort of logs that shows why the worker
exited?"): the helper, written for the CLI, reports a bad clip header and calls `sys.exit(1)`.
In a DataLoader worker SystemExit is not an Exception, so it is not sent back to the main
process as an error with its traceback: the worker process just exits with code 1 and the
training loop fails with "exited unexpectedly", naming no clip and no line.
"""

import struct
import sys

import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset

N_CLIPS, SAMPLES, WORDS = 512, 1600, 12


def make_clip(i):
    g = torch.Generator().manual_seed(i)
    magic = b"RIFX" if i == 301 else b"RIFF"  # one clip was written big-endian by another tool
    body = torch.randn(SAMPLES, generator=g).mul(3000).short().numpy().tobytes()
    return magic + struct.pack("<I", len(body)) + body


def read_clip(blob):
    if blob[:4] != b"RIFF":
        print(f"error: unsupported header {blob[:4]!r}", file=sys.stderr)
        sys.exit(1)  # HANG: cli-exit
    n = struct.unpack("<I", blob[4:8])[0]
    return torch.frombuffer(bytearray(blob[8:8 + n]), dtype=torch.int16).float() / 32768


class Clips(Dataset):
    def __len__(self):
        return N_CLIPS

    def __getitem__(self, i):
        return read_clip(make_clip(i)), i % WORDS


def main():
    loader = DataLoader(Clips(), batch_size=16, shuffle=False, num_workers=4)
    model = nn.Sequential(nn.Conv1d(1, 8, 9, stride=4), nn.ReLU(), nn.AdaptiveAvgPool1d(16),
                          nn.Flatten(), nn.Linear(128, WORDS))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for epoch in range(3):
        for step, (wave, word) in enumerate(loader):  # HANG: loader
            loss = nn.functional.cross_entropy(model(wave.unsqueeze(1)), word)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 4 == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)


if __name__ == "__main__":
    main()
