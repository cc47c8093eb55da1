"""Run hangdoctor as a non-root user, as most users do: created here (root can; CI runs as root),
with only what such a user has (no ptrace of other users' processes, often no kernel log)."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USER = "hangdoctor-ci"


@dataclass(frozen=True)
class User:
    """A non-root user and how to run hangdoctor as them."""

    name: str
    uid: int
    gid: int
    python: str  # an interpreter this user may execute
    pythonpath: str  # hangdoctor and its dependencies, readable by this user
    bin_dir: str  # where py-spy is
    home: Path  # a folder of theirs, for reports

    def run(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """`hangdoctor ARGS` as this user, with a clean environment of theirs."""
        environment = {
            "HOME": str(self.home),
            "PATH": f"{self.bin_dir}:/usr/bin:/bin",
            "PYTHONPATH": self.pythonpath,
            "LANG": "C.UTF-8",
            **(env or {}),
        }
        command = [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--reset-env",
            "env",
            *(f"{k}={v}" for k, v in environment.items()),
            self.python,
            "-m",
            "hangdoctor",
            *args,
        ]
        return subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=self.home, check=False
        )


def _can_execute(uid: int, gid: int, path: str) -> bool:
    # Through `env`, as `User.run` does: setpriv itself may start a binary the user could not.
    done = subprocess.run(
        [
            "setpriv",
            f"--reuid={uid}",
            f"--regid={gid}",
            "--clear-groups",
            "env",
            path,
            "-c",
            "import sys; print(sys.version_info[:2])",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0 and done.stdout.strip() == str(tuple(sys.version_info[:2]))


def _user() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
            check=True,
            timeout=30,
            capture_output=True,
        )
        entry = pwd.getpwnam(USER)
    return entry.pw_uid, entry.pw_gid


@pytest.fixture(scope="session")
def unprivileged() -> Iterator[User]:
    """A non-root user; skipped where we are not root or lack setpriv/useradd."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("useradd"):
        pytest.skip("needs root (to create a user) and setpriv")
    uid, gid = _user()
    # Our interpreter may live where the user cannot go (a pyenv under /root): then the
    # system's of the same version runs our site-packages, as it can (same ABI).
    version = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    candidates = [sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"]
    python = next((c for c in candidates if c and _can_execute(uid, gid, c)), None)
    if python is None:
        pytest.skip("no Python of this version that a non-root user may run")
    home = Path(tempfile.mkdtemp(prefix="hangdoctor-ci-"))
    os.chown(home, uid, gid)
    os.chmod(home, 0o755)
    site = sysconfig.get_paths()["purelib"]
    try:
        yield User(
            USER, uid, gid, python, f"{REPO / 'src'}:{site}", str(Path(sys.executable).parent), home
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
