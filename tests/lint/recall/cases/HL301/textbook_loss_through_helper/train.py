# case: HL301 textbook
# The running total is a tensor kept on self; the loss reaches it through a small helper.
class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.epoch_loss = 0

    def step(self, batch):
        loss = self.model(batch).mean()
        loss.backward()
        self.optimizer.step()
        return loss

    def fit(self, loader):
        for batch in loader:
            loss = self.step(batch)
            self.epoch_loss += loss  # expect: HL301
