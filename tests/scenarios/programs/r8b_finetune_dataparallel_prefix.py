"""Two-stage training: pre-train a small encoder as a denoising autoencoder, then fine-tune a
classifier that starts from the pre-trained encoder weights.

The pre-training stage wraps its model in `nn.DataParallel` ("uses every GPU when there are
several"; on a CPU-only box the wrapper just calls the module) and saves
`model.state_dict()` of the wrapper, so every key in the checkpoint starts with "module.".
The fine-tuning stage builds the bare encoder and calls `load_state_dict` on it, which fails
with `RuntimeError: Error(s) in loading state_dict for Sequential: Missing key(s) ... "0.weight"
... Unexpected key(s) ... "module.0.weight"` (the helper strips "encoder." from the keys, but
not the "module." in front of it).

Written from https://stackoverflow.com/questions/61854165 ("Why must use DataParallel when
testing?": a model trained under nn.DataParallel only loads again when wrapped the same way,
because the saved keys carry the "module." prefix; loading it into the plain model raises the
missing/unexpected keys error).
"""

import os
import tempfile

import torch
from torch import nn

FEATURES = 40
HIDDEN = 16
CLASSES = 4


def make_encoder() -> nn.Module:
    return nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, HIDDEN), nn.ReLU())


class Autoencoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = make_encoder()
        self.decoder = nn.Linear(HIDDEN, FEATURES)

    def forward(self, x):
        return self.decoder(self.encoder(x))


def pretrain(data: torch.Tensor, ckpt_path: str) -> None:
    model = nn.DataParallel(Autoencoder())  # no-op wrapper without GPUs
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3)
    for step in range(300):
        batch = data[torch.randint(0, len(data), (64,))]
        noisy = batch + 0.3 * torch.randn_like(batch)
        loss = nn.functional.mse_loss(model(noisy), batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"pretrain step {step} loss {loss.item():.4f}", flush=True)
    torch.save({"model": model.state_dict(), "step": 300}, ckpt_path)  # HANG: save-wrapped
    print(f"saved {ckpt_path}", flush=True)


def load_pretrained_encoder(ckpt_path: str) -> nn.Module:
    ckpt = torch.load(ckpt_path, map_location="cpu")
    encoder = make_encoder()
    encoder_state = {k.replace("encoder.", "", 1): v for k, v in ckpt["model"].items()
                     if "decoder" not in k}
    encoder.load_state_dict(encoder_state)  # HANG: load-encoder
    return encoder


def finetune(data: torch.Tensor, labels: torch.Tensor, ckpt_path: str) -> None:
    encoder = load_pretrained_encoder(ckpt_path)
    model = nn.Sequential(encoder, nn.Linear(HIDDEN, CLASSES))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for step in range(200):
        idx = torch.randint(0, len(data), (32,))
        loss = nn.functional.cross_entropy(model(data[idx]), labels[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 50 == 0:
            print(f"finetune step {step} loss {loss.item():.4f}", flush=True)


def main() -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    data = torch.randn(4096, FEATURES)
    labels = (data[:, :CLASSES].argmax(dim=1)).long()
    run_dir = tempfile.mkdtemp(prefix="pretrain-")
    ckpt_path = os.path.join(run_dir, "encoder_pretrain.pt")
    pretrain(data, ckpt_path)
    finetune(data, labels, ckpt_path)


if __name__ == "__main__":
    main()
