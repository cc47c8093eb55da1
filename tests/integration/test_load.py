"""Load: 200 MB of job output through `run`, byte-exact in the log and on stdout, while the
disk under the log is slow (a loop device mounted `sync`, throttled to 25 MB/s by the blkio
cgroup). A slow log slows the job's writes down (the pipe fills), never loses or reorders them."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

sys.path.insert(0, str(FIXTURES))
from run_numbered_lines import lines

SIZE = 200 * 10**6
LOG_DISK_BYTES_PER_S = 25 * 2**20
BLKIO = Path("/sys/fs/cgroup/blkio")


def _sh(*command: str) -> str:
    return subprocess.run(
        command, check=True, capture_output=True, text=True, timeout=60
    ).stdout.strip()


@pytest.fixture
def slow_disk() -> Iterator[tuple[Path, Path]]:
    """(a folder on a slow disk, the cgroup whose writes to it are throttled)."""
    if (
        os.geteuid() != 0
        or not (BLKIO / "blkio.throttle.write_bps_device").exists()
        or not all(shutil.which(tool) for tool in ("losetup", "mkfs.ext4", "mount", "umount"))
    ):
        pytest.skip("needs root, loop devices and the cgroup v1 blkio controller")
    work = Path(tempfile.mkdtemp(prefix="hangdoctor-slow-disk-"))
    image, mount, cgroup = work / "disk.img", work / "mnt", BLKIO / work.name
    loop = None
    try:
        with open(image, "wb") as handle:
            handle.truncate(400 * 2**20)
        _sh("mkfs.ext4", "-q", "-F", str(image))
        loop = _sh("losetup", "--find", "--show", str(image))
        mount.mkdir()
        _sh("mount", "-o", "sync", loop, str(mount))
        device = Path(f"/sys/block/{Path(loop).name}/dev").read_text().strip()
        cgroup.mkdir()
        (cgroup / "blkio.throttle.write_bps_device").write_text(f"{device} {LOG_DISK_BYTES_PER_S}")
        yield mount, cgroup
    except subprocess.CalledProcessError as error:
        pytest.skip(f"cannot make a slow disk here: {error.stderr.strip()}")
    finally:
        if mount.is_mount():
            subprocess.run(["umount", str(mount)], timeout=60, check=False)
        if loop:
            subprocess.run(["losetup", "-d", loop], timeout=60, check=False)
        with contextlib.suppress(OSError):
            cgroup.rmdir()
        shutil.rmtree(work, ignore_errors=True)


def test_200_mb_through_run_to_a_slow_log_disk(slow_disk):
    mount, cgroup = slow_disk
    report_dir = mount / "report"
    expected = hashlib.sha256(lines(SIZE)).hexdigest()
    started = time.monotonic()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hangdoctor",
            "run",
            "--report-dir",
            str(report_dir),
            "--",
            sys.executable,
            str(FIXTURES / "run_numbered_lines.py"),
            str(SIZE),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # hangdoctor and everything it starts write under the throttle
        preexec_fn=lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid())),
    )
    seen = hashlib.sha256()
    count = [0]

    def drain() -> None:
        assert proc.stdout is not None
        while chunk := proc.stdout.read(1 << 20):
            seen.update(chunk)
            count[0] += len(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc.wait(timeout=300)
        reader.join(timeout=60)
    finally:
        proc.kill()
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert count[0] == SIZE and seen.hexdigest() == expected  # the terminal's copy
    log = report_dir / "output.log"
    assert log.stat().st_size == SIZE
    digest = hashlib.sha256()
    with log.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    assert digest.hexdigest() == expected  # the log's copy
    # The throttle did bite: the log could not have been written faster than the disk allows.
    assert elapsed >= SIZE / LOG_DISK_BYTES_PER_S * 0.8
    print(
        f"200 MB through run to a {LOG_DISK_BYTES_PER_S / 2**20:.0f} MiB/s log disk: "
        f"{elapsed:.1f} s"
    )
