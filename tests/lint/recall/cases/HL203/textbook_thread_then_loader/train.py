# case: HL203 textbook
import threading

from torch.utils.data import DataLoader


def start_heartbeat(report):
    threading.Thread(target=report, daemon=True).start()


def main(dataset, report):
    start_heartbeat(report)
    return DataLoader(dataset, batch_size=8, num_workers=4)  # expect: HL203
