"""Probe the distributed environment: the variables NCCL/gloo/torch read (redacted), network
interfaces, MASTER_ADDR's resolution and whether MASTER_PORT is free here."""

from __future__ import annotations

import contextlib
import ipaddress
import socket

import psutil

from hangdoctor import bounded
from hangdoctor.doctor.facts import Distributed
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


def probe_distributed(environ: dict[str, str]) -> Distributed:
    """Distributed environment facts; resolution is bounded in time."""
    env = {k: redact_pair(k, v) for k, v in sorted(environ.items())
           if k.startswith(_PREFIXES) or k in _NAMES}
    addresses, interfaces = _local_addresses()
    fields: dict[str, object] = {"environment": env, "interfaces": interfaces}
    addr = environ.get("MASTER_ADDR")
    is_local: bool | None = None
    if addr:
        fields["master_addr"] = addr
        infos, failure = bounded.call(
            "resolve", lambda: socket.getaddrinfo(addr, None, proto=socket.IPPROTO_TCP),
            RESOLVE_TIMEOUT_S)
        if infos:
            resolved = tuple(dict.fromkeys(str(info[4][0]) for info in infos))
            fields["master_addr_resolves_to"] = resolved
            is_local = any(a in addresses or ipaddress.ip_address(a).is_loopback
                           for a in resolved)
        else:
            fields["master_addr_resolves_to"] = ()
            fields["master_addr_error"] = failure.message if failure else "no address"
        fields["master_addr_is_local"] = is_local
    port = environ.get("MASTER_PORT")
    if port is not None:
        fields["master_port"] = port
        if not port.isdigit() or not 0 < int(port) < 65536:
            fields["master_port_error"] = f"{port!r} is not a TCP port number"
        elif is_local is not False:  # unset MASTER_ADDR means this host (env:// default)
            fields["master_port_free"] = port_free(int(port))
    return Distributed(**fields)  # type: ignore[arg-type]
