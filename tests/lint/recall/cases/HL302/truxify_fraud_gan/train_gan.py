# case: HL302 real https://github.com/KanishJebaMathewM/Truxify/pull/11841
# Unbounded generator loss in the fraud GAN produced NaN weights during the discriminator
# update (the fix: clip_grad_norm_ with max norm 1.0).
import torch
import torch.nn as nn


def train(generator: nn.Module, discriminator: nn.Module, loader, noise_dim, epochs):
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4)
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
    bce = nn.BCEWithLogitsLoss()
    for _ in range(epochs):
        for real in loader:
            z = torch.randn(real.size(0), noise_dim)
            fake = generator(z)
            d_loss = bce(discriminator(real), torch.ones(real.size(0), 1)) + \
                bce(discriminator(fake.detach()), torch.zeros(real.size(0), 1))
            opt_d.zero_grad()
            d_loss.backward()  # expect: HL302
            opt_d.step()
            g_loss = bce(discriminator(fake), torch.ones(real.size(0), 1))
            opt_g.zero_grad()
            g_loss.backward()
            opt_g.step()
