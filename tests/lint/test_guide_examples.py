"""The troubleshooting guide's own two lint examples (issue 17, item 10), through the real
`hangdoctor lint` CLI: a tokenizer that pads to max_length without truncating, and a tf.data
pipeline that a helper module builds and returns without prefetch while no caller in the
project adds one. Each fixed version is quiet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

BUILDER = """import tensorflow as tf


def build_dataset(files, batch_size):
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(parse_example, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch_size)
    return ds
"""
BATCH_LINE = 7
LOOP = """def run_epoch(model, dataset):
    for images, labels in dataset:
        model.train_on_batch(images, labels)
"""
LOOP_PREFETCHING = """import tensorflow as tf


def run_epoch(model, dataset):
    dataset = dataset.prefetch(tf.data.AUTOTUNE)
    for images, labels in dataset:
        model.train_on_batch(images, labels)
"""
TRAIN = """import data
from loop import run_epoch


def main():
    train_ds = data.build_dataset(["train.tfrecord"], 32)
    run_epoch(build_model(), train_ds)
"""
EVALUATE = """from data import build_dataset


def evaluate(model):
    for images, labels in build_dataset(["val.tfrecord"], 64):
        metric.update_state(labels, model(images))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project of its own (a requirements.txt marks its root)."""
    (tmp_path / "requirements.txt").write_text("tensorflow\ntransformers\n")
    return tmp_path


def findings(path: Path) -> tuple[int, list[dict]]:
    done = run_cli("lint", str(path), "--format", "json", timeout=60)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)["findings"]


def test_pipeline_trained_on_in_another_module_is_found_in_the_builder(project: Path) -> None:
    """data.py builds it, train.py gets it through `import data`, and loop.py's function,
    which train.py hands it to, trains on it: the finding is at the builder's batch()."""
    (project / "data.py").write_text(BUILDER)
    (project / "loop.py").write_text(LOOP)
    (project / "train.py").write_text(TRAIN)
    (project / "evaluate.py").write_text(EVALUATE)
    code, found = findings(project)
    assert code == 1
    assert [(Path(f["path"]).name, f["line"], f["id"]) for f in found] == [
        ("data.py", BATCH_LINE, "HL202")
    ]
    assert "loop.py:2" in found[0]["message"]


def test_pipeline_no_caller_prefetches_is_found_with_its_callers(project: Path) -> None:
    (project / "data.py").write_text(BUILDER)
    (project / "evaluate.py").write_text(EVALUATE)
    (project / "export.py").write_text(
        "import data\n\nbatches = data.build_dataset(files, 8)\nfor x, _ in batches:\n"
        "    write(model(x))\n"
    )
    code, found = findings(project)
    assert code == 1
    assert [(Path(f["path"]).name, f["line"], f["id"]) for f in found] == [
        ("data.py", BATCH_LINE, "HL202")
    ]
    message = found[0]["message"]
    assert "no caller adds one" in message
    assert "evaluate.py:5" in message and "export.py:3" in message


def test_pipeline_prefetched_by_a_callee_in_another_module_is_quiet(project: Path) -> None:
    (project / "data.py").write_text(BUILDER)
    (project / "loop.py").write_text(LOOP_PREFETCHING)
    (project / "train.py").write_text(TRAIN)
    code, found = findings(project)
    assert (code, found) == (0, [])


def test_pipeline_prefetched_by_one_caller_is_quiet(project: Path) -> None:
    (project / "data.py").write_text(BUILDER)
    (project / "evaluate.py").write_text(EVALUATE)
    (project / "serve.py").write_text(
        "import data\n\nstream = data.build_dataset(files, 8).prefetch(4)\n"
    )
    code, found = findings(project)
    assert (code, found) == (0, [])


def test_pipeline_called_only_from_the_tests_is_quiet(project: Path) -> None:
    """A builder the project's own code never calls is returned to callers out of sight;
    a test that iterates it checks it, and says nothing about them."""
    (project / "data.py").write_text(BUILDER)
    (project / "tests").mkdir()
    (project / "tests" / "check_data.py").write_text(
        "from data import build_dataset\n\n\ndef test_shapes():\n"
        "    for images, _ in build_dataset(['x.tfrecord'], 2):\n"
        "        assert images.shape[0] == 2\n"
    )
    code, found = findings(project)
    assert (code, found) == (0, [])


TOKENIZE = """from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
encodings = tokenizer(texts, padding="max_length", max_length=512)
"""


@pytest.mark.parametrize("truncation", ["", ", truncation=False"])
def test_tokenizer_padding_to_max_length_without_truncation_is_found(
    project: Path, truncation: str
) -> None:
    (project / "prepare.py").write_text(TOKENIZE.replace("512)", f"512{truncation})"))
    code, found = findings(project)
    assert code == 1
    assert [(f["line"], f["id"]) for f in found] == [(4, "HL201")]
    assert "no truncation" in found[0]["message"]


@pytest.mark.parametrize("truncation", ["True", "'longest_first'", "'only_first'"])
def test_tokenizer_that_truncates_is_quiet(project: Path, truncation: str) -> None:
    (project / "prepare.py").write_text(TOKENIZE.replace("512)", f"512, truncation={truncation})"))
    code, found = findings(project)
    assert (code, found) == (0, [])
