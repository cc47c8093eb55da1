"""Rebuild the real-code corpus that `hangdoctor lint`'s precision study (LINT_PRECISION.md) and
benchmark (bench_lint.py) read: public training code, extracted outside the repository.

The repositories are read from git snapshots under /work/.mirror/OWNER+NAME/repo (what the
agent-side `fetch` tool brings; any bare clone at that place works too). Nothing is downloaded
here: for a repository that is missing, the script says what to fetch or clone, e.g.
`git clone --bare https://github.com/pytorch/examples /work/.mirror/pytorch+examples/repo`.
Files are extracted with `git show` at the pinned commit below (or at HEAD, with a warning, when
that commit is absent).

    python benchmarks/lint_corpus.py [--out /tmp/lintcorpus] [--mirror /work/.mirror]

The corpus is never committed: it is other people's code, read only to measure the linter.
"""

from __future__ import annotations

import argparse
import fnmatch
import subprocess
import sys
from pathlib import Path

#: (owner/name, commit, globs): the snapshots read for LINT_PRECISION.md.
CORPUS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("pytorch/examples", "77f55b912142e11fcfdf5b530231fb9c52f181e8", ("*.py",)),
    ("huggingface/accelerate", "16cb6eb80dd9aa8b4df1a63ef57863e455d53b83", ("examples/*.py",)),
    ("huggingface/peft", "5d602fdbff04c33c1c4de55cda9d4ae1d7cb7e40", ("examples/*.py",)),
    ("Lightning-AI/pytorch-lightning", "7f0c3436cd3f6ad3753125672024fc415cbcb414",
     ("examples/*.py",)),
    ("huggingface/trl", "f2cd57710ae345ea6428ae95363267fcf38a3dc8",
     ("examples/*.py", "trl/trainer/*.py")),
    ("tensorflow/examples", "608f7db8c511e3dcc420afc564496e4516ceb800", ("*.py",)),
    ("NVIDIA/apex", "6424da3b4faa6c8f062da4a48c424fff3f02d42d",
     ("*.cu", "*.cuh", "apex/*.py", "examples/*.py")),
    ("pytorch/extension-cpp", "0ec4969c7bc8e15a8456e5eb9d9ca0a7ec15bc95",
     ("*.py", "*.cu", "*.cuh")),
)


def _git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True,
                          capture_output=True, timeout=300).stdout


def extract(repo: str, commit: str, globs: tuple[str, ...], mirror: Path, out: Path) -> int:
    """Write the files of `repo` at `commit` that match `globs` under out/OWNER+NAME; returns
    how many were written (0 when the snapshot is missing)."""
    git_dir = mirror / repo.replace("/", "+") / "repo"
    if not git_dir.exists():
        print(f"missing {repo}: fetch it (agent tool `fetch github:{repo}`) or "
              f"`git clone --bare https://github.com/{repo} {git_dir}`", file=sys.stderr)
        return 0
    try:
        _git(git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
        ref = commit
    except subprocess.CalledProcessError:
        ref = "HEAD"
        print(f"warning: {repo} lacks {commit[:12]}; using HEAD", file=sys.stderr)
    names = _git(git_dir, "ls-tree", "-r", "--name-only", ref).decode().splitlines()
    target = out / repo.replace("/", "+")
    written = 0
    for name in names:
        if not any(fnmatch.fnmatch(name, pattern) for pattern in globs):
            continue
        path = target / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(_git(git_dir, "show", f"{ref}:{name}"))
        written += 1
    print(f"{repo}@{ref[:12]}: {written} files")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/lintcorpus"))
    parser.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    options = parser.parse_args(argv)
    total = sum(extract(repo, commit, globs, options.mirror, options.out)
                for repo, commit, globs in CORPUS)
    print(f"{total} files under {options.out}")
    return 0 if total else 1


if __name__ == "__main__":
    sys.exit(main())
