# case: HL301 fixed https://github.com/google/brax/pull/152
def train(model, criterion, optimizer, loader):
    total_loss = 0.0
    history = []
    for x, y in loader:
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        total_loss += float(loss)
        history.append(loss.item())
    return total_loss, history
