# case: HL203 real https://github.com/ultralytics/ultralytics/pull/26085
# A DataLoader subclass created its iterator in __init__ (forking workers and starting the
# pin-memory thread); the test loader built next forked its own workers while the train
# loader's pin-memory thread ran, and validation workers hung (the fix: start lazily).
from torch.utils.data import DataLoader


class InfiniteDataLoader(DataLoader):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.iterator = super().__iter__()

    def __iter__(self):
        for _ in range(len(self)):
            yield next(self.iterator)


def build_loaders(train_set, test_set, workers):
    train_loader = InfiniteDataLoader(train_set, batch_size=16, num_workers=workers,
                                      pin_memory=True, shuffle=True)
    test_loader = InfiniteDataLoader(test_set, batch_size=32, num_workers=workers * 2,  # expect: HL203
                                     pin_memory=True)
    return train_loader, test_loader
