"""Probe the distributed environment: the variables NCCL/gloo/torch read (redacted), network
interfaces, MASTER_ADDR's resolution and whether MASTER_PORT is free here."""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from typing import NamedTuple

import psutil

from hangdoctor import bounded
from hangdoctor.doctor.facts import Distributed, FrameworkSettings
from hangdoctor.i18n import _
from hangdoctor.redact import redact_pair

RESOLVE_TIMEOUT_S = 2.0
_PREFIXES = ("NCCL_", "TORCH_", "TORCHELASTIC_", "GLOO_", "MASTER_", "CUDA_VISIBLE_DEVICES")
_NAMES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "NODE_RANK")


def _local_addresses() -> tuple[set[str], tuple[str, ...]]:
    addresses: set[str] = set()
    interfaces: tuple[str, ...] = ()
    with contextlib.suppress(Exception):
        found = psutil.net_if_addrs()
        interfaces = tuple(sorted(found))
        for entries in found.values():
            for entry in entries:
                if entry.family in (socket.AF_INET, socket.AF_INET6):
                    addresses.add(entry.address.split("%")[0])
    return addresses, interfaces


def port_free(port: int) -> bool:
    """Whether a TCP listener could bind `port` on all interfaces here (as the TCPStore does)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("", port))
        except OSError:
            return False
    return True


class _Resolution(NamedTuple):
    addresses: tuple[str, ...]
    error: str | None
    is_local: bool | None


def _resolve(addr: str, local: set[str]) -> _Resolution:
    """What MASTER_ADDR resolves to (bounded in time), and whether that is this host."""
    infos, failure = bounded.call(
        "resolve",
        lambda: socket.getaddrinfo(addr, None, proto=socket.IPPROTO_TCP),
        RESOLVE_TIMEOUT_S,
    )
    if not infos:
        return _Resolution((), failure.message if failure else _("no address"), None)
    resolved = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    is_local = any(a in local or ipaddress.ip_address(a).is_loopback for a in resolved)
    return _Resolution(resolved, None, is_local)


#: The variables JAX, XLA, TensorFlow and Keras read (`doctor.checks.frameworks`).
FRAMEWORK_PREFIXES = ("XLA_", "JAX_", "TF_", "KERAS_")


def probe_framework_settings(environ: dict[str, str]) -> FrameworkSettings:
    """The JAX, XLA, TensorFlow and Keras variables of this shell, redacted."""
    return FrameworkSettings(
        environment={
            k: redact_pair(k, v)
            for k, v in sorted(environ.items())
            if k.startswith(FRAMEWORK_PREFIXES)
        }
    )


def probe_distributed(environ: dict[str, str]) -> Distributed:
    """Distributed environment facts; resolution is bounded in time."""
    env = {
        k: redact_pair(k, v)
        for k, v in sorted(environ.items())
        if k.startswith(_PREFIXES) or k in _NAMES
    }
    local, interfaces = _local_addresses()
    addr = environ.get("MASTER_ADDR") or None
    resolution = _resolve(addr, local) if addr else None
    port = environ.get("MASTER_PORT")
    port_error = free = None
    if port is not None and (not port.isdigit() or not 0 < int(port) < 65536):
        port_error = _("{port} is not a TCP port number", port=repr(port))
    elif port is not None and (resolution is None or resolution.is_local is not False):
        free = port_free(int(port))  # unset MASTER_ADDR means this host (env:// default)
    return Distributed(
        environment=env,
        interfaces=interfaces,
        master_addr=addr,
        master_addr_resolves_to=resolution.addresses if resolution else None,
        master_addr_error=resolution.error if resolution else None,
        master_addr_is_local=resolution.is_local if resolution else None,
        master_port=port,
        master_port_free=free,
        master_port_error=port_error,
    )
