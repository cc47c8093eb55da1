# case: HL302 real https://github.com/chentuochao/Sound_Bubble/issues/4
# A grad_clip setting existed in the configuration but was never applied to the LSTM model;
# gradients exploded and the loss went to NaN after about 2,000 iterations.
import torch
import torch.nn as nn


class Separator(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.lstm = nn.LSTM(hidden, hidden, num_layers=4, batch_first=True)
        self.head = nn.Linear(hidden, hidden)

    def forward(self, x):
        return self.head(self.lstm(x)[0])


def train(config, loader):
    model = Separator(config["hidden"])
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    grad_clip = config.get("grad_clip")
    print("grad clip configured:", grad_clip)
    for mixture, target in loader:
        loss = nn.functional.l1_loss(model(mixture), target)
        optimizer.zero_grad()
        loss.backward()  # expect: HL302
        optimizer.step()
