# case: HL302 fixed https://github.com/Marcovaldong/lstmp.pytorch/issues/2
import torch
import torch.nn as nn


def train(model: nn.LSTM, batches, optimizer):
    for inputs, targets in batches:
        loss = nn.functional.mse_loss(model(inputs)[0], targets)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()


def build():
    return nn.LSTM(8, 8)
