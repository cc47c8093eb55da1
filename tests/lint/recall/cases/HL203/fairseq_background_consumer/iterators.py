# case: HL203 real https://github.com/facebookresearch/fairseq/blob/3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99/fairseq/data/iterators.py
# Public code reviewed in the precision study: a background consumer thread reads the
# training iterator while a validation loader created mid-epoch forks its workers.
import queue
from threading import Thread

from torch.utils.data import DataLoader


class BackgroundConsumer(Thread):
    def __init__(self, source, sink):
        super().__init__(daemon=True)
        self.source = source
        self.sink = sink

    def run(self):
        for item in self.source:
            self.sink.put(item)


class BufferedIterator:
    def __init__(self, iterable):
        self.queue = queue.Queue(16)
        self.consumer = BackgroundConsumer(iterable, self.queue)
        self.consumer.start()


def make_iterator(dataset, collater, num_workers):
    loader = DataLoader(dataset, collate_fn=collater, num_workers=num_workers)  # expect: HL203
    return BufferedIterator(loader)
