# case: HL302 real https://github.com/ustclby/Unsupervised-Domain-Specific-Deblurring/issues/1
# The GAN borrowed DRIT's architecture but not its gradient clipping on the discriminator;
# on a new dataset the generator and discriminator losses blew up to NaN.
import torch


class Model:
    def __init__(self, generator, discriminator):
        self.gen = generator
        self.dis = discriminator
        self.gen_opt = torch.optim.Adam(self.gen.parameters(), lr=1e-4)
        self.dis_opt = torch.optim.Adam(self.dis.parameters(), lr=1e-4)

    def train(self, loader):
        for blurred, sharp in loader:
            fake = self.gen(blurred)
            loss_dis = self.dis(fake.detach()).mean() - self.dis(sharp).mean()
            self.dis_opt.zero_grad()
            loss_dis.backward()  # expect: HL302
            self.dis_opt.step()
            loss_gen = -self.dis(fake).mean()
            self.gen_opt.zero_grad()
            loss_gen.backward()
            self.gen_opt.step()
