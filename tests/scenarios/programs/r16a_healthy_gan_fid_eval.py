"""Train a small DCGAN on synthetic 32x32 'blob' images and evaluate an FID metric.

The job trains a generator/discriminator pair for two short "ticks", logging
losses every few iterations.  After the first tick it runs the metric
evaluation, StyleGAN-style: it generates a large fake set, pushes both the real
and the fake set through a fixed feature network (a frozen random conv net
standing in for Inception), fits a Gaussian to each feature set and computes
the Frechet distance, whose matrix square root is taken through an eigen-
decomposition.  This evaluation prints nothing until it is done and takes
tens of seconds on a 2-core CPU, so the log looks frozen after
"Evaluating metrics...".  It is legitimate work: the job then reports the FID,
trains the second tick and exits 0.

From https://github.com/NVlabs/stylegan3/issues/178 ("stucked on Evaluating
metrics" -- reply: "how long was it stuck there? in my experience it can hang
on evaluating metrics for 30min-1hr. the fid50k_full is hungry")
"""
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

Z_DIM = 64
IMG = 32


def make_real_images(n, seed):
    g = torch.Generator().manual_seed(seed)
    yy, xx = torch.meshgrid(torch.linspace(-1, 1, IMG), torch.linspace(-1, 1, IMG), indexing="ij")
    imgs = torch.zeros(n, 1, IMG, IMG)
    for k in range(3):
        cx = torch.rand(n, 1, 1, generator=g) * 1.4 - 0.7
        cy = torch.rand(n, 1, 1, generator=g) * 1.4 - 0.7
        s = torch.rand(n, 1, 1, generator=g) * 0.25 + 0.1
        imgs[:, 0] += torch.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s ** 2))
    return (imgs.clamp(0, 1) * 2 - 1)


class Generator(nn.Module):
    def __init__(self, ch=64):
        super().__init__()
        self.fc = nn.Linear(Z_DIM, ch * 2 * 4 * 4)
        self.net = nn.Sequential(
            nn.BatchNorm2d(ch * 2), nn.ReLU(),
            nn.ConvTranspose2d(ch * 2, ch, 4, 2, 1), nn.BatchNorm2d(ch), nn.ReLU(),
            nn.ConvTranspose2d(ch, ch // 2, 4, 2, 1), nn.BatchNorm2d(ch // 2), nn.ReLU(),
            nn.ConvTranspose2d(ch // 2, 1, 4, 2, 1), nn.Tanh(),
        )
        self.ch = ch

    def forward(self, z):
        return self.net(self.fc(z).view(-1, self.ch * 2, 4, 4))


class Discriminator(nn.Module):
    def __init__(self, ch=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, ch // 2, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch // 2, ch, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Conv2d(ch, ch * 2, 4, 2, 1), nn.LeakyReLU(0.2),
            nn.Flatten(), nn.Linear(ch * 2 * 4 * 4, 1),
        )

    def forward(self, x):
        return self.net(x).squeeze(1)


class FeatureNet(nn.Module):
    """Frozen random conv net used as the metric's feature extractor."""

    def __init__(self, dim=512):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AvgPool2d(2),
            nn.Conv2d(64, 256, 3, padding=1), nn.ReLU(),
            nn.Conv2d(256, dim, 1), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        )
        for p in self.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        return self.net(x)


@torch.no_grad()
def features(feat_net, images, batch=200):
    out = [feat_net(images[i:i + batch]).double() for i in range(0, len(images), batch)]
    return torch.cat(out)


def sqrtm_psd(mat):
    vals, vecs = torch.linalg.eigh(mat)
    return (vecs * vals.clamp_min(0).sqrt()) @ vecs.T


@torch.no_grad()
def compute_fid(G, feat_net, real, n_fake, seed):
    g = torch.Generator().manual_seed(seed)
    G.eval()
    fake = torch.cat([G(torch.randn(1000, Z_DIM, generator=g)) for _ in range(n_fake // 1000)])
    G.train()
    fr, ff = features(feat_net, real), features(feat_net, fake)
    mu1, mu2 = fr.mean(0), ff.mean(0)
    c1, c2 = torch.cov(fr.T), torch.cov(ff.T)
    s1 = sqrtm_psd(c1)
    covmean = sqrtm_psd(s1 @ c2 @ s1)
    return float((mu1 - mu2).pow(2).sum() + torch.trace(c1) + torch.trace(c2) - 2 * torch.trace(covmean))


def train_tick(G, D, opt_g, opt_d, real, iters, batch, g, t0, tick):
    for it in range(iters):
        idx = torch.randint(0, len(real), (batch,), generator=g)
        x = real[idx]
        z = torch.randn(batch, Z_DIM, generator=g)
        fake = G(z)
        d_loss = F.softplus(-D(x)).mean() + F.softplus(D(fake.detach())).mean()
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = F.softplus(-D(fake)).mean()
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        if it % 20 == 0 or it == iters - 1:
            print(f"tick {tick} kimg {(it + 1) * batch / 1000:.2f} loss/D {d_loss.item():.3f} "
                  f"loss/G {g_loss.item():.3f} ({time.time() - t0:.1f}s)", flush=True)


def main():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    g = torch.Generator().manual_seed(1)
    real = make_real_images(10_000, seed=2)
    G, D = Generator(), Discriminator()
    feat_net = FeatureNet().eval()
    opt_g = torch.optim.Adam(G.parameters(), lr=2e-4, betas=(0.5, 0.999))
    opt_d = torch.optim.Adam(D.parameters(), lr=2e-4, betas=(0.5, 0.999))
    t0 = time.time()
    train_tick(G, D, opt_g, opt_d, real, iters=60, batch=64, g=g, t0=t0, tick=0)
    print("Evaluating metrics...", flush=True)
    t_eval = time.time()
    fid = compute_fid(G, feat_net, real[:9000], n_fake=9000, seed=3)
    print(f"fid9k {fid:.3f} (metric time {time.time() - t_eval:.1f}s)", flush=True)
    train_tick(G, D, opt_g, opt_d, real, iters=40, batch=64, g=g, t0=t0, tick=1)
    print(f"done in {time.time() - t0:.1f}s", flush=True)


if __name__ == "__main__":
    main()
