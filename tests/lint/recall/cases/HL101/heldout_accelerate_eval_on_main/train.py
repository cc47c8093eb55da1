# case: HL101 real https://github.com/huggingface/accelerate/issues/157
# Held out. Evaluation ran on the local main process only; the evaluation gathered its
# predictions, a collective that the other processes never entered.
from accelerate import Accelerator


def evaluate(accelerator, model, loader):
    predictions = []
    for batch in loader:
        predictions.append(accelerator.gather(model(batch).argmax(-1)))
    return predictions


def train(model, train_loader, eval_loader, optimizer, epochs):
    accelerator = Accelerator()
    model, optimizer, train_loader = accelerator.prepare(model, optimizer, train_loader)
    for _ in range(epochs):
        for batch in train_loader:
            accelerator.backward(model(batch).mean())
            optimizer.step()
        if accelerator.is_local_main_process:
            evaluate(accelerator, model, eval_loader)  # expect: HL101
