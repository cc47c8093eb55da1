# case: HL302 real https://github.com/torchgan/torchgan/pull/42
# The Wasserstein loss without gradient penalty needs the discriminator's parameters clipped;
# the implementation lacked it and training diverged.
import torch


def train_wgan(generator, discriminator, loader, noise):
    opt_d = torch.optim.RMSprop(discriminator.parameters(), lr=5e-5)
    opt_g = torch.optim.RMSprop(generator.parameters(), lr=5e-5)
    for real in loader:
        fake = generator(noise(real.size(0)))
        loss_d = discriminator(fake.detach()).mean() - discriminator(real).mean()
        opt_d.zero_grad()
        loss_d.backward()  # expect: HL302
        opt_d.step()
        loss_g = -discriminator(fake).mean()
        opt_g.zero_grad()
        loss_g.backward()
        opt_g.step()
