# case: HL203 real https://github.com/pytorch/pytorch/issues/1355
# A reporter's loader hung after a random number of epochs: wandb and tensorboard threads
# ran in the process while every epoch forked new workers (fixed with persistent_workers).
import torch
import wandb
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter


def main(model, dataset, optimizer, epochs):
    wandb.init(project="speech")
    writer = SummaryWriter()
    loader = DataLoader(dataset, batch_size=32, num_workers=8, shuffle=True)  # expect: HL203
    for epoch in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            loss.backward()
            optimizer.step()
        writer.add_scalar("loss", loss.item(), epoch)
