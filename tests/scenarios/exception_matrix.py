"""The exception matrix (issue 26): one generated program per raise site and wrapping, each
with its expected origin line generated with it.

A record without a label makes `read_label` raise `KeyError: 'label'` in one of four forms
(plain; chained with `raise ... from`; raised while handling it; re-raised with the original
traceback as text in the message), under each way a training job runs code (the main thread, a
thread, a DataLoader worker's dataset or collate function, a Pool, a ProcessPoolExecutor, a
subprocess, a torchrun rank, mp.spawn, Lightning, `accelerate launch`, the Trainer's collator,
a Ray task, a Ray Train worker). Whatever wraps it, the report must name the KeyError at the
line marked `# HANG: origin`, in the process and rank that raised it.

    python tests/scenarios/exception_matrix.py          # write the programs again
    python tests/scenarios/exception_matrix.py --check  # exit 1 when one is out of date

The programs live in `programs/matrix/` (generated, committed, recorded like any scenario);
`test_exception_matrix.py` fails when one differs from what this file generates.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.scenarios.generated import write_or_check
from tests.scenarios.scenario import PROGRAMS, Scenario

FOLDER = PROGRAMS / "matrix"
HANG_TIMEOUT_S = 10.0  # frameworks import for seconds without output (see launch.py)

# rank 1 of two takes records 1 and 3 (`RECORDS[rank::2]`): the bad one is the last.
_RECORDS = """RECORDS = [
    {"label": 0, "x": 0.5},
    {"label": 1, "x": 0.25},
    {"label": 0, "x": 0.1},
    {"x": 0.75},
]
"""

_FORMS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # name: (what it is, read_label's body, imports)
    "plain": (
        "raised plainly",
        '    return record["label"]  # HANG: origin\n',
        (),
    ),
    "chained": (
        "chained to a ValueError (`raise ... from`)",
        "    try:\n"
        '        return record["label"]  # HANG: origin\n'
        "    except KeyError as missing:\n"
        '        raise ValueError(f"bad record {record!r}") from missing\n',
        (),
    ),
    "handling": (
        "followed by a ValueError raised while handling it",
        "    try:\n"
        '        return record["label"]  # HANG: origin\n'
        "    except KeyError:\n"
        '        raise ValueError(f"bad record {record!r}")\n',
        (),
    ),
    "message": (
        "re-raised as a RuntimeError whose message holds the original traceback",
        "    try:\n"
        '        return record["label"]  # HANG: origin\n'
        "    except KeyError:\n"
        '        raise RuntimeError("reading a label failed:\\n" + traceback.format_exc()) from None\n',
        ("traceback",),
    ),
}


@dataclass(frozen=True)
class Wrapper:
    """One way a job runs the code that raises."""

    name: str
    what: str
    imports: tuple[str, ...]
    body: str  # the rest of the program, after read_label
    rank: int | None = None
    torchrun: bool = False
    launcher: tuple[str, ...] = ()
    limit_s: float = 120.0
    category: str = "process.exception"


_LOADER_DATASET = """
class Records(Dataset):
    def __len__(self):
        return len(RECORDS)

    def __getitem__(self, index):
        record = RECORDS[index]
        return torch.tensor([record["x"]]), read_label(record)


def main():
    loader = DataLoader(Records(), batch_size=2, num_workers=2)
    for step, (x, y) in enumerate(loader):
        print("step", step, x.shape, y.tolist(), flush=True)
"""

_LOADER_COLLATE = """
def collate(records):
    xs = torch.tensor([[r["x"]] for r in records])
    return xs, torch.tensor([read_label(r) for r in records])


def main():
    loader = DataLoader(RECORDS, batch_size=2, num_workers=2, collate_fn=collate)
    for step, (x, y) in enumerate(loader):
        print("step", step, x.shape, y.tolist(), flush=True)
"""

_RANKS = """
def train(rank):
    total = torch.zeros(1)
    for record in RECORDS[rank::2]:
        total += read_label(record)
        dist.all_reduce(total)
        print(f"rank {rank}: total {total.item()}", flush=True)
"""

_INDEXED = """
class Indices(Dataset):
    def __len__(self):
        return len(RECORDS)

    def __getitem__(self, index):
        return index


def batch_of(indices):
    records = [RECORDS[int(i)] for i in indices]
    xs = torch.tensor([[r["x"]] for r in records])
    return xs, torch.tensor([read_label(r) for r in records])
"""

_MAIN = '\n\nif __name__ == "__main__":\n    main()\n'

WRAPPERS: tuple[Wrapper, ...] = (
    Wrapper(
        "main",
        "in the main thread",
        (),
        "\n\ndef main():\n    total = 0\n    for record in RECORDS:\n"
        '        total += read_label(record)\n    print("labels", total)\n' + _MAIN,
    ),
    Wrapper(
        "thread",
        "in a loader thread; the main thread gives up waiting for its labels",
        ("queue", "threading"),
        """

def load(labels):
    for record in RECORDS:
        labels.put(read_label(record))


def main():
    labels = queue.Queue()
    threading.Thread(target=load, args=(labels,), daemon=True).start()
    for _ in RECORDS:
        try:
            print("label", labels.get(timeout=5), flush=True)
        except queue.Empty:
            raise RuntimeError("the loader thread sent no label for 5 s") from None
"""
        + _MAIN,
    ),
    Wrapper(
        "dataset",
        "in a DataLoader worker's Dataset.__getitem__",
        ("torch", "from torch.utils.data import DataLoader, Dataset"),
        "\n" + _LOADER_DATASET + _MAIN,
    ),
    Wrapper(
        "collate",
        "in a DataLoader worker's collate function",
        ("torch", "from torch.utils.data import DataLoader"),
        "\n" + _LOADER_COLLATE + _MAIN,
    ),
    Wrapper(
        "pool",
        "in a multiprocessing.Pool worker",
        ("multiprocessing",),
        "\n\ndef main():\n    with multiprocessing.Pool(2) as pool:\n"
        '        print("labels", pool.map(read_label, RECORDS))\n' + _MAIN,
    ),
    Wrapper(
        "executor",
        "in a ProcessPoolExecutor worker",
        ("from concurrent.futures import ProcessPoolExecutor",),
        "\n\ndef main():\n    with ProcessPoolExecutor(2) as pool:\n"
        '        print("labels", list(pool.map(read_label, RECORDS)))\n' + _MAIN,
    ),
    Wrapper(
        "subprocess",
        "in a child process that the job runs with subprocess.run(check=True)",
        ("subprocess", "sys"),
        """

def child():
    for record in RECORDS:
        print("label", read_label(record), flush=True)


def main():
    subprocess.run([sys.executable, __file__, "--child"], check=True)


if __name__ == "__main__":
    child() if sys.argv[1:] == ["--child"] else main()
""",
    ),
    Wrapper(
        "torchrun",
        "on rank 1 of a torchrun job (gloo); rank 0 waits in all_reduce",
        ("torch", "torch.distributed as dist"),
        "\n"
        + _RANKS
        + """

def main():
    dist.init_process_group("gloo")
    train(dist.get_rank())
    dist.destroy_process_group()
"""
        + _MAIN,
        rank=1,
        torchrun=True,
    ),
    Wrapper(
        "spawn",
        "on process 1 of torch.multiprocessing.spawn (gloo); process 0 waits in all_reduce",
        ("socket", "torch", "torch.distributed as dist", "torch.multiprocessing"),
        "\n"
        + _RANKS
        + """

def worker(rank, world, port):
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world
    )
    train(rank)
    dist.destroy_process_group()


def main():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    torch.multiprocessing.spawn(worker, args=(2, port), nprocs=2)
"""
        + _MAIN,
        rank=1,
    ),
    Wrapper(
        "lightning",
        "in a LightningModule's training_step (Trainer.fit on CPU)",
        ("lightning", "torch", "from torch.utils.data import DataLoader, Dataset"),
        "\n"
        + _INDEXED
        + """

class Model(lightning.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(1, 2)

    def training_step(self, batch, batch_idx):
        xs, labels = batch_of(batch)
        return torch.nn.functional.cross_entropy(self.layer(xs), labels)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    trainer = lightning.Trainer(
        max_epochs=1,
        accelerator="cpu",
        devices=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    trainer.fit(Model(), DataLoader(Indices(), batch_size=2))
"""
        + _MAIN,
        limit_s=150.0,
    ),
    Wrapper(
        "accelerate",
        "in the training loop of a script run by `accelerate launch` (one CPU process)",
        (
            "torch",
            "from accelerate import Accelerator",
            "from torch.utils.data import DataLoader, Dataset",
        ),
        "\n"
        + _INDEXED
        + """

def main():
    accelerator = Accelerator(cpu=True)
    model = torch.nn.Linear(1, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Indices(), batch_size=2)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for indices in loader:
        xs, labels = batch_of(indices)
        loss = torch.nn.functional.cross_entropy(model(xs), labels)
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
"""
        + _MAIN,
        launcher=(
            "-m",
            "accelerate.commands.launch",
            "--cpu",
            "--num_processes",
            "1",
            "--num_machines",
            "1",
            "--mixed_precision",
            "no",
            "--dynamo_backend",
            "no",
        ),
        limit_s=150.0,
    ),
    Wrapper(
        "trainer",
        "in the data collator of a transformers Trainer",
        ("tempfile", "torch", "from transformers import Trainer, TrainingArguments"),
        """

class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(1, 2)

    def forward(self, x, labels=None):
        logits = self.layer(x)
        return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}


def collate(records):
    return {
        "x": torch.tensor([[r["x"]] for r in records]),
        "labels": torch.tensor([read_label(r) for r in records]),
    }


def main():
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out,
            per_device_train_batch_size=2,
            num_train_epochs=1,
            report_to=[],
            use_cpu=True,
            save_strategy="no",
            remove_unused_columns=False,
            disable_tqdm=True,
        )
        Trainer(model=Tiny(), args=args, train_dataset=RECORDS, data_collator=collate).train()
"""
        + _MAIN,
        limit_s=150.0,
    ),
    Wrapper(
        "ray_task",
        "in a Ray task; the driver gets it from ray.get",
        ("ray",),
        """

@ray.remote
def label_of(record):
    return read_label(record)


def main():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    try:
        print("labels", ray.get([label_of.remote(r) for r in RECORDS]))
    finally:
        ray.shutdown()
"""
        + _MAIN,
        limit_s=150.0,
    ),
    Wrapper(
        "ray_train",
        "in a Ray Train worker's training loop (TorchTrainer, one worker)",
        (
            "ray",
            "tempfile",
            "from ray.train import RunConfig, ScalingConfig",
            "from ray.train.torch import TorchTrainer",
        ),
        """

def train_loop(config):
    for record in RECORDS:
        print("label", read_label(record), flush=True)


def main():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    try:
        with tempfile.TemporaryDirectory() as out:
            trainer = TorchTrainer(
                train_loop,
                scaling_config=ScalingConfig(num_workers=1),
                run_config=RunConfig(storage_path=out, name="matrix"),
            )
            trainer.fit()
    finally:
        ray.shutdown()
"""
        + _MAIN,
        limit_s=180.0,
    ),
)


def _import_line(name: str) -> str:
    return name if name.startswith("from ") else f"import {name}"


# Ray drops the frames of a remote chain's first exception from the text it re-raises (the
# KeyError's line is in no output): for Ray tasks the line that re-raised it, in the same
# function, is the nearest the report can name.
_REMOTE_CHAIN_LOSES_ORIGIN = ("ray_task",)
_RERAISE_MARK = "  # HANG: reraise"


def program_text(wrapper: Wrapper, form: str) -> str:
    """The program of one cell of the matrix."""
    what, body, form_imports = _FORMS[form]
    if wrapper.name in _REMOTE_CHAIN_LOSES_ORIGIN and form in ("chained", "handling"):
        body = "\n".join(
            line + _RERAISE_MARK if line.lstrip().startswith("raise ValueError") else line
            for line in body.split("\n")
        )
    imports = sorted({*form_imports, *wrapper.imports}, key=lambda n: (n.startswith("from "), n))
    header = (
        f'"""Exception matrix, cell {wrapper.name} x {form} (generated by '
        "tests/scenarios/exception_matrix.py: do\nnot edit, generate again). A record without a "
        f"label: KeyError {what},\n{wrapper.what}.\n"
        'The report must name the KeyError at the line marked `# HANG: origin`."""\n\n'
    )
    lines = "\n".join(_import_line(n) for n in imports)
    return (
        header
        + (lines + "\n\n" if lines else "")
        + _RECORDS
        + "\n\ndef read_label(record):\n"
        + body
        + wrapper.body
    )


def _markers(wrapper: Wrapper, form: str) -> tuple[str, ...]:
    if wrapper.name in _REMOTE_CHAIN_LOSES_ORIGIN and form in ("chained", "handling"):
        return ("origin", "reraise")
    return ("origin",)


def cell_name(wrapper: Wrapper, form: str) -> str:
    return f"x_{wrapper.name}_{form}"


def scenarios() -> tuple[Scenario, ...]:
    """Every cell of the matrix as a scenario of the catalogue."""
    return tuple(
        Scenario(
            name=cell_name(wrapper, form),
            program=f"matrix/{cell_name(wrapper, form)}.py",
            category=wrapper.category,
            verdict="failed",
            rank=wrapper.rank,
            markers=_markers(wrapper, form),
            torchrun=wrapper.torchrun,
            launcher=wrapper.launcher,
            hang_timeout_s=HANG_TIMEOUT_S,
            limit_s=wrapper.limit_s,
        )
        for wrapper in WRAPPERS
        for form in _FORMS
    )


def expected_files() -> dict[Path, str]:
    return {
        FOLDER / f"{cell_name(w, form)}.py": program_text(w, form)
        for w in WRAPPERS
        for form in _FORMS
    }


def main() -> int:
    return write_or_check(__doc__.splitlines()[0], FOLDER, expected_files())


if __name__ == "__main__":
    sys.exit(main())
