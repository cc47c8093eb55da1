# case: HL101 real https://github.com/allenai/allennlp/pull/4693
# The trainer saved through its checkpointer only on the master; the DeepSpeed checkpointer
# calls engine.save_checkpoint, whose barrier the other workers never reached.
import deepspeed


class DeepspeedCheckpointer:
    def __init__(self, engine, directory):
        self.engine = engine
        self.directory = directory

    def save_checkpoint(self, epoch):
        self.engine.save_checkpoint(self.directory, tag=str(epoch))


class DeepspeedTrainer:
    def __init__(self, args, model, rank):
        engine, _, _, _ = deepspeed.initialize(args=args, model=model)
        self._engine = engine
        self._master = rank == 0
        self._checkpointer = DeepspeedCheckpointer(engine, args.serialization_dir)

    def train_epoch(self, epoch, batches):
        for batch in batches:
            loss = self._engine(batch)
            self._engine.backward(loss)
            self._engine.step()
        if self._master and self._checkpointer is not None:
            self._checkpointer.save_checkpoint(epoch)  # expect: HL101
