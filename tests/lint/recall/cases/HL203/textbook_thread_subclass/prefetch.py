# case: HL203 textbook
# A Thread subclass started before the loader forks its workers.
import threading

from torch.utils.data import DataLoader


class Uploader(threading.Thread):
    def __init__(self, directory):
        super().__init__(daemon=True)
        self.directory = directory

    def run(self):
        pass


def main(dataset, directory):
    Uploader(directory).start()
    return DataLoader(dataset, batch_size=8, num_workers=4)  # expect: HL203
