# case: HL301 textbook
# The loss tensor kept inside a record appended every step.
def train(model, loader, optimizer):
    history = []
    for step, (x, y) in enumerate(loader):
        loss = (model(x) - y).pow(2).mean()
        loss.backward()
        optimizer.step()
        history.append({"step": step, "loss": loss})  # expect: HL301
    return history
