"""Arm, in this process, the instrumentation that `hangdoctor run` injects into a job.

`run` puts `instrument/bootstrap/` first on the job's PYTHONPATH; here the same files are loaded
from the package by their paths, under the names they have there (`_hangdoctor_probe` and its
parts), so that they behave exactly as under `run`: the probe reports into the status folder,
and its `sitecustomize`'s import watcher installs the torch hooks when torch is imported (at
once if it already is).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

from hangdoctor.instrument import bootstrap_dir
from hangdoctor.instrument.bootstrap import _hangdoctor_protocol as protocol

#: The name the bootstrap's `sitecustomize` is loaded under here (it then hides no other one).
_SITE_MODULE = "_hangdoctor_site"


def _load(name: str, file: str) -> ModuleType:
    """A bootstrap module by its path, under `name`; the one already loaded if there is one."""
    return protocol.load_module(name, str(bootstrap_dir() / file))


def probe_module() -> ModuleType:
    """The probe (its parts loaded with it), as `sitecustomize` loads it under `run`."""
    _load("_hangdoctor_protocol", "_hangdoctor_protocol.py")
    return _load(protocol.PROBE_MODULE, protocol.PROBE_MODULE + ".py")


def arm(status_dir: Path | None, supervised: bool) -> ModuleType:
    """Arm the probe and return its SDK part (`_hangdoctor_sdk`). `status_dir`: the folder to
    report into (None: the one in the environment, `run`'s). Under `run` its `sitecustomize`
    already waits for torch; otherwise ours is loaded to do so."""
    if status_dir is not None:
        os.environ[protocol.STATUS_DIR_ENV] = str(status_dir)
        # The Flight Recorder, as `run` enables it: read by torch when a process group starts.
        if not os.environ.get("TORCH_FR_BUFFER_SIZE") and not os.environ.get(
            "TORCH_NCCL_TRACE_BUFFER_SIZE"
        ):
            os.environ["TORCH_FR_BUFFER_SIZE"] = "2000"
    probe = probe_module()
    probe.arm()
    if not supervised:
        _load(_SITE_MODULE, "sitecustomize.py")  # arms torch now, or when it is imported
    return sys.modules["_hangdoctor_sdk"]


def armed_sdk() -> ModuleType | None:
    """The SDK part of a probe already armed in this process (by `run`'s bootstrap, or by
    `watch()`), arming it where `run` set the status folder but torch, which arms it, is not
    imported yet (a JAX loop under `run`); None when nothing watches this process."""
    probe = sys.modules.get(protocol.PROBE_MODULE)
    if probe is not None and getattr(probe, "_armed", False):
        return sys.modules.get("_hangdoctor_sdk")
    if os.environ.get(protocol.STATUS_DIR_ENV):
        return arm(None, supervised=bool(os.environ.get(protocol.SUPERVISED_ENV)))
    return None
