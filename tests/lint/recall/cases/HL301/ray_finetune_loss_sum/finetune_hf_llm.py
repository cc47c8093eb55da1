# case: HL301 real https://github.com/ray-project/ray/pull/40940
# The LLM fine-tuning template added outputs.loss to loss_sum every step, a steady memory
# leak until the loss could be freed each iteration.
def training_function(model, train_loader, optimizer, log_every):
    loss_sum = 0.0
    for step, batch in enumerate(train_loader):
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss_sum += loss  # expect: HL301
        if step % log_every == 0:
            print(loss_sum / (step + 1))
