"""Training a small causal LM with a cache of activation buffers (one per recent batch, kept for
a lookahead auxiliary loss), carved out of a preallocated slab by a paged allocator.

Written from https://github.com/LMCache/LMCache/pull/4675 (`MemoryObj.__del__` calls the
allocator's `free()`, which takes a module-wide non-reentrant lock): when the last reference to
a buffer is dropped while the same thread already holds that lock (here: `allocate()` evicts the
oldest cached buffer under the lock), the finalizer runs on that thread and blocks on the lock
it holds. One thread waits on itself; the training loop stops without a word.
"""

import collections
import threading

import torch
from torch import nn

PAGES, PAGE, DIM, KEEP = 64, 256, 64, 4


class PagedAllocator:
    def __init__(self):
        self.slab = torch.zeros(PAGES, PAGE)
        self.free_pages = list(range(PAGES))
        self.lock = threading.Lock()
        self.cache = collections.OrderedDict()  # batch id -> Buffer, most recent last

    def allocate(self, key):
        with self.lock:  # HANG: allocate-lock
            if len(self.cache) >= KEEP:
                self.cache.popitem(last=False)  # HANG: evict-under-lock
            page = self.free_pages.pop()
            buf = Buffer(self, page)
            self.cache[key] = buf
            return buf

    def free(self, page):
        with self.lock:  # HANG: free-in-del
            self.free_pages.append(page)


class Buffer:
    def __init__(self, allocator, page):
        self.allocator, self.page = allocator, page

    def view(self):
        return self.allocator.slab[self.page]

    def __del__(self):
        self.allocator.free(self.page)


def main():
    torch.manual_seed(0)
    alloc = PagedAllocator()
    model = nn.Sequential(nn.Embedding(1000, DIM), nn.Linear(DIM, 1000))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(200):
        x = torch.randint(0, 1000, (32, 16))
        logits = model(x[:, :-1])
        loss = nn.functional.cross_entropy(logits.reshape(-1, 1000), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        buf = alloc.allocate(step)
        buf.view().copy_(logits.detach().mean((0, 1))[:PAGE])
        del buf
        print(f"step {step} loss {loss.item():.4f} free pages {len(alloc.free_pages)}", flush=True)


if __name__ == "__main__":
    main()
