"""The built wheel is all a user gets: installed into a fresh venv, with its dependencies from the
package index, `run`, `dump` and `lint` work from it, and its help points at nothing it lacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.wheel

_INSTALL_S = 900


def _clean_env() -> dict[str, str]:
    """The environment without this checkout on the path: only the wheel may be imported."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a fresh venv with the wheel built from this checkout installed."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "-w",
            str(root / "dist"),
            str(REPO),
        ],
        check=True,
        timeout=_INSTALL_S,
        env=_clean_env(),
    )
    wheel = next((root / "dist").glob("hangdoctor-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "hangdoctor/py.typed" in names
    assert "hangdoctor-watch.pth" in names  # HANGDOCTOR_WATCH=1, at the top of site-packages
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not any(n.startswith("tests/") for n in names)
    # The catalogs are compiled by the build (setup.py), not committed; the .po stays behind.
    assert "hangdoctor/locale/zh/LC_MESSAGES/hangdoctor.mo" in names
    assert not any(n.endswith(".po") for n in names)
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=120)
    bin_dir = root / "venv" / "bin"
    subprocess.run(
        [str(bin_dir / "pip"), "install", "-q", str(wheel)],
        check=True,
        timeout=_INSTALL_S,
        env=_clean_env(),
    )
    return bin_dir


def _hangdoctor(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_dir / "hangdoctor"), *args],
        cwd=cwd,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_package_comes_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(installed / "python"), "-c", "import hangdoctor; print(hangdoctor.__file__)"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "site-packages" in done.stdout and str(REPO) not in done.stdout


def test_run_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    done = _hangdoctor(
        installed,
        "run",
        "--report-dir",
        "out",
        "--",
        str(installed / "python"),
        "-c",
        "print('trained')",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "trained" in done.stdout
    assert json.loads((tmp_path / "out" / "report.json").read_text())["verdict"] == "completed"


def test_dump_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        done = _hangdoctor(installed, "dump", str(sleeper.pid), "--report-dir", "out", cwd=tmp_path)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert done.returncode in (0, 1, 4), done.stderr  # 4: no ptrace here, /proc still read
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert [p["pid"] for p in report["processes"]] == [sleeper.pid]


def test_lint_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n\nbreakpoint()\n")
    done = _hangdoctor(installed, "lint", "train.py", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "train.py:3:1 HL402" in done.stdout


def test_chinese_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import torch\n\nbreakpoint()\n")
    done = _hangdoctor(installed, "lint", "--lang", "zh", "train.py", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "train.py:3:1 HL402 训练代码中遗留了调试断点" in done.stdout


@pytest.mark.parametrize("command", ["run", "dump", "analyze", "doctor", "lint"])
def test_help_points_at_nothing_the_wheel_lacks(
    installed: Path, tmp_path: Path, command: str
) -> None:
    done = _hangdoctor(installed, command, "--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "docs/" not in done.stdout and "README" not in done.stdout
