"""Rebuild the real-code corpus that `hangdoctor lint`'s precision study (LINT_STUDY.md) and
benchmark (bench_lint.py) read: public training code, extracted outside the repository.

The repositories are read from git snapshots under /work/.mirror/OWNER+NAME/repo (what the
agent-side `fetch` tool brings; any bare clone at that place works too). Nothing is downloaded
here: for a repository that is missing, the script says what to fetch or clone, e.g.
`git clone --bare https://github.com/pytorch/examples /work/.mirror/pytorch+examples/repo`.
Files are extracted with `git show` at the pinned commit below (or at HEAD, with a warning, when
that commit is absent); symlinks and submodules are skipped. So that the linter sees each
repository as a project, as it would a checkout, the project markers on the path to the
extracted files come along (pyproject.toml, setup.cfg, requirements.txt: not code, so the
linted files stay the same; setup.py is left out for that reason) and each repository's
directory gets an empty `.git` directory, standing for the checkout's own.

    python benchmarks/lint_corpus.py [--out /tmp/lintcorpus] [--mirror /work/.mirror]

The corpus is never committed: it is other people's code, read only to measure the linter.
"""

from __future__ import annotations

import argparse
import fnmatch
import subprocess
import sys
from pathlib import Path

#: (owner/name, commit, globs): the snapshots read for LINT_STUDY.md. `*` in a glob also
#: matches `/`, so `examples/*.py` takes every Python file under examples/.
CORPUS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8", ("*.py",)),
    ("huggingface/accelerate", "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83", ("examples/*.py",)),
    ("huggingface/peft", "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40", ("examples/*.py",)),
    (
        "Lightning-AI/pytorch-lightning",
        "7f0c3436cd3f6ad3753125672024fc415cbcb414",
        ("examples/*.py",),
    ),
    (
        "huggingface/trl",
        "f2cd57710ae345ea6428ae95363267fcf38a3dc8",
        ("examples/*.py", "trl/trainer/*.py"),
    ),
    ("tensorflow/examples", "608f7db8c511e3dcc420afc564496e4516ceb800", ("*.py",)),
    (
        "NVIDIA/apex",
        "6424da3b4faa6c8f062da4a48c424fff3f02d42d",
        ("*.cu", "*.cuh", "apex/*.py", "examples/*.py"),
    ),
    (
        "pytorch/extension-cpp",
        "0ec4969c7bc8e15a8456e5eb9d9ca0a7ec15bc95",
        ("*.py", "*.cu", "*.cuh"),
    ),
    # Second round: distributed training code, where the HL1xx rules have something to find.
    ("karpathy/nanoGPT", "3adf61e154c3fe3fca428ad6bc3818b27a3b8291", ("*.py",)),
    ("karpathy/minGPT", "37baab71b9abea1b76ab957409a1cc2fbfba8a26", ("*.py",)),
    ("tloen/alpaca-lora", "8bb8579e403dc78e37fe81ffbb253c413007323f", ("*.py",)),
    ("tatsu-lab/stanford_alpaca", "761dc5bfbdeeffa89b8bff5d038781a4055f796a", ("*.py",)),
    (
        "lm-sys/FastChat",
        "0e6d3e4beaab66f4d3f93db72541a4abab8af28d",
        ("fastchat/train/*.py", "fastchat/data/*.py"),
    ),
    ("openai/improved-diffusion", "1bc7bbbdc414d83d4abf2ad8cc1446dc36c4e4d5", ("*.py",)),
    ("openai/guided-diffusion", "22e0df8183507e13a7813f8d38d51b072ca1e67c", ("*.py",)),
    (
        "facebookresearch/detectron2",
        "02b5c4e295e990042a714712c21dc79b731e8833",
        (
            "tools/*.py",
            "detectron2/engine/*.py",
            "detectron2/utils/*.py",
            "detectron2/evaluation/*.py",
            "detectron2/data/*.py",
            "detectron2/checkpoint/*.py",
            "projects/*/train_net.py",
            "*.cu",
        ),
    ),
    (
        "facebookresearch/fairseq",
        "3d262bb25690e4eb2e7d3c1309b1e9c406ca4b99",
        (
            "fairseq_cli/*.py",
            "fairseq/trainer.py",
            "fairseq/distributed/*.py",
            "fairseq/checkpoint_utils.py",
            "fairseq/utils.py",
            "fairseq/data/*.py",
            "fairseq/tasks/*.py",
            "examples/*.py",
            "*.cu",
            "*.cuh",
        ),
    ),
    ("facebookresearch/dino", "7c446df5b9f45747937fb0d72314eb9f7b66930a", ("*.py",)),
    ("facebookresearch/mae", "efb2a8062c206524e35e47d04501ed4f544c0ae8", ("*.py",)),
    ("facebookresearch/deit", "7e160fe43f0252d17191b71cbb5826254114ea5b", ("*.py",)),
    ("facebookresearch/moco-v3", "c349e6e24f40d3fedb22d973f92defa4cedf37a7", ("*.py",)),
    ("facebookresearch/ConvNeXt", "048efcea897d999aed302f2639b6270aedf8d4c8", ("*.py",)),
    ("microsoft/Swin-Transformer", "f82860bfb5225915aca09c3227159ee9e1df874d", ("*.py", "*.cu")),
    ("EleutherAI/gpt-neox", "ea7aefd8f8e183256992d9fede4d7c71a46d67a5", ("*.py", "*.cu", "*.cuh")),
    (
        "huggingface/pytorch-image-models",
        "aa4b5850c1543fa488abf260f18390eda46cf85d",
        (
            "train.py",
            "validate.py",
            "inference.py",
            "benchmark.py",
            "timm/utils/*.py",
            "timm/data/*.py",
        ),
    ),
    ("huggingface/diffusers", "58eb52c0803ea9af3abec60841c2a093bdf1f951", ("examples/*.py",)),
    (
        "huggingface/nanotron",
        "2411b022a75fb7f7561a1bb4166706da5e1b76de",
        ("src/*.py", "examples/*.py", "run_train.py", "tools/*.py"),
    ),
    ("meta-llama/llama-recipes", "faae2fd877995430906e1d0904131ecdaa89a604", ("*.py",)),
    (
        "pytorch/torchtitan",
        "b5bcd76c66d0acb1a08b176d9639425bc55e0b2a",
        ("torchtitan/*.py", "scripts/*.py"),
    ),
    ("haotian-liu/LLaVA", "c121f0432da27facab705978f83c4ada465e46fd", ("*.py",)),
    ("mlfoundations/open_clip", "89fb801f1e6087880e951fc8354b8a2077b79c6d", ("src/*.py",)),
    ("CompVis/stable-diffusion", "21f890f9da3cfbeaba8e2ac3c425ee9e998d5229", ("*.py",)),
    (
        "hiyouga/LLaMA-Factory",
        "ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30",
        ("src/*.py", "scripts/*.py", "examples/*.py"),
    ),
    (
        "OpenAccess-AI-Collective/axolotl",
        "0801f239ccfb0ff06b52eec0029e3f2f954ee147",
        ("src/*.py", "scripts/*.py"),
    ),
    ("allenai/OLMo", "59a53e3f68e546330ca5a99ec626e58f9ab96494", ("olmo/*.py", "scripts/*.py")),
    ("ultralytics/yolov5", "5081342f04fb287fc2e5f2b5a4e06752b7937b1c", ("*.py",)),
    ("kuangliu/pytorch-cifar", "49b7aa97b0c12fe0d4054e670403a16b6b834ddd", ("*.py",)),
    (
        "microsoft/DeepSpeedExamples",
        "83757d9c937daabd1089a08051061706cb73900d",
        ("*.py", "*.cu", "*.cuh"),
    ),
    (
        "microsoft/DeepSpeed",
        "38327e07f6cd39b63418f60cedd1651b0be3e7c3",
        (
            "deepspeed/runtime/*.py",
            "deepspeed/utils/*.py",
            "deepspeed/checkpoint/*.py",
            "deepspeed/comm/*.py",
            "deepspeed/launcher/*.py",
            "csrc/*.cu",
            "csrc/*.cuh",
        ),
    ),
    (
        "NVIDIA/Megatron-LM",
        "d98e8a64ddf34856e74b24714e3bedb2f5a39553",
        (
            "megatron/training/*.py",
            "megatron/legacy/*.py",
            "megatron/core/datasets/*.py",
            "megatron/core/distributed/*.py",
            "megatron/core/dist_checkpointing/*.py",
            "megatron/core/pipeline_parallel/*.py",
            "megatron/core/parallel_state.py",
            "pretrain_*.py",
            "tools/*.py",
            "examples/*.py",
            "*.cu",
        ),
    ),
    (
        "NVIDIA/DeepLearningExamples",
        "729963dd47e7c8bd462ad10bfac7a7b0b604e6dd",
        ("PyTorch/*.py", "PyTorch/*.cu", "PyTorch/*.cuh", "TensorFlow2/*.py"),
    ),
    # transformers' research projects (moved out of huggingface/transformers, which is too
    # large to snapshot whole; optimum-habana's examples stand in for its examples/pytorch).
    (
        "huggingface/transformers-research-projects",
        "fccd0cdab03c1407bb7def05e1b48528fc817078",
        ("*.py",),
    ),
    (
        "huggingface/sentence-transformers",
        "cad211983f36ce458e9b3360f3e11b29fc54cbd8",
        ("examples/*.py", "sentence_transformers/*.py"),
    ),
    # transformers' examples/pytorch Trainer scripts, as adapted by optimum-habana.
    (
        "huggingface/optimum-habana",
        "1d8504c6c7666a19d71968dba50976dceaf7c6b6",
        ("examples/*.py", "optimum/habana/accelerate/*.py", "optimum/habana/distributed/*.py"),
    ),
    ("facebookresearch/dinov2", "b8931f7bf91576930313be2c6d6af376033b35f0", ("*.py",)),
    ("facebookresearch/DiT", "ed81ce2229091fd4ecc9a223645f95cf379d582b", ("*.py",)),
    ("facebookresearch/detr", "29901c51d7fe8712168b8d0d64351170bc0f83e0", ("*.py",)),
    (
        "facebookresearch/maskrcnn-benchmark",
        "57eec25b75144d9fb1a6857f32553e1574177daf",
        ("*.py", "*.cu"),
    ),
    (
        "NVlabs/stylegan2-ada-pytorch",
        "d72cc7d041b42ec8e806021a205ed9349f87c6a4",
        ("*.py", "*.cu", "*.cuh"),
    ),
    ("NVlabs/edm", "008a4e5316c8e3bfe61a62f874bddba254295afb", ("*.py", "*.cu")),
    ("rosinality/stylegan2-pytorch", "bef283a1c24087da704d16c30abc8e36e63efa0e", ("*.py", "*.cu")),
    (
        "Lightning-AI/litgpt",
        "26857050fe3ff627cd714fe92f5838f51a3d5efa",
        ("litgpt/*.py", "extensions/*.py"),
    ),
    ("salesforce/BLIP", "056a169437371659074aa2732649d5de3bffb4a8", ("*.py",)),
    (
        "salesforce/LAVIS",
        "506965b9c4a18c1e565bd32acaccabe0198433f7",
        (
            "train.py",
            "evaluate.py",
            "lavis/runners/*.py",
            "lavis/tasks/*.py",
            "lavis/common/dist_utils.py",
            "lavis/datasets/*.py",
        ),
    ),
    (
        "open-mmlab/mmengine",
        "254342938d9bde1775c39ea7d5181c5d294026c4",
        ("mmengine/*.py", "examples/*.py"),
    ),
    ("BlinkDL/RWKV-LM", "524481d5099b38d9bc8ef1e89209161b86c8011b", ("*.py", "*.cu")),
)


#: Project markers the linter looks for (see hangdoctor.lint.project), extracted alongside.
MARKERS = frozenset({"pyproject.toml", "setup.cfg", "requirements.txt"})


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True, timeout=300
    ).stdout


def extract(repo: str, commit: str, globs: tuple[str, ...], mirror: Path, out: Path) -> int:
    """Write the files of `repo` at `commit` that match `globs` under out/OWNER+NAME; returns
    how many were written (0 when the snapshot is missing)."""
    git_dir = mirror / repo.replace("/", "+") / "repo"
    if not git_dir.exists():
        print(
            f"missing {repo}: fetch it (agent tool `fetch github:{repo}`) or "
            f"`git clone --bare https://github.com/{repo} {git_dir}`",
            file=sys.stderr,
        )
        return 0
    try:
        _git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
        ref = commit
    except subprocess.CalledProcessError:
        ref = "HEAD"
        print(f"warning: {repo} lacks {commit[:12]}; using HEAD", file=sys.stderr)
    entries = _git(git_dir, "ls-tree", "-r", ref).decode().splitlines()
    target = out / repo.replace("/", "+")
    (target / ".git").mkdir(parents=True, exist_ok=True)
    files = []
    for entry in entries:
        meta, _, name = entry.partition("\t")
        if meta.split()[0] != "100644" and meta.split()[0] != "100755":
            continue  # symlinks (their blob is the link text), submodules
        files.append(name)
    chosen = [n for n in files if any(fnmatch.fnmatch(n, pattern) for pattern in globs)]
    directories = {str(Path(n).parent) for n in chosen}
    for parent in list(directories):
        directories.update(str(p) for p in Path(parent).parents)
    markers = [n for n in files if Path(n).name in MARKERS and str(Path(n).parent) in directories]
    written = 0
    for name in sorted(set(chosen) | set(markers)):
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_git(git_dir, "show", f"{ref}:{name}"))
        written += name in chosen
    print(f"{repo}@{ref[:12]}: {written} files")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/lintcorpus"))
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    options = parser.parse_args(argv)
    total = sum(
        extract(repo, commit, globs, options.mirror, options.out) for repo, commit, globs in CORPUS
    )
    print(f"{total} files under {options.out}")
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main())
