"""Distributed environment: NCCL_* and TORCH_* variables worth setting or unsetting, the
network interfaces they name, MASTER_ADDR resolvable and MASTER_PORT free."""

from __future__ import annotations

from hangdoctor.doctor.facts import Distributed, Facts
from hangdoctor.doctor.result import CheckResult

TORCH_ENV_SOURCE = "https://pytorch.org/docs/stable/torch_nccl_environment_variables.html"
NCCL_ENV_SOURCE = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
DIST_SOURCE = "https://pytorch.org/docs/stable/distributed.html"


def _r(id: str, status: str, title: str, **fields: str | None) -> CheckResult:
    return CheckResult(id=id, area="distributed", status=status, title=title,  # type: ignore[arg-type]
                       **{k: v for k, v in fields.items() if v is not None})


def _matches_interface(spec: str, interfaces: tuple[str, ...], exact: bool) -> bool:
    """Whether NCCL_SOCKET_IFNAME-style `spec` selects at least one interface (NCCL: a
    comma-separated list of prefixes, `=` for exact names, `^` to exclude)."""
    if spec.startswith("^"):
        excluded = [p for p in spec[1:].split(",") if p]
        return any(not any(i.startswith(p) for p in excluded) for i in interfaces)
    if spec.startswith("="):
        spec, exact = spec[1:], True
    wanted = [p for p in spec.split(",") if p]
    return any((i == p) if exact else i.startswith(p) for i in interfaces for p in wanted)


def _variables(d: Distributed) -> list[CheckResult]:
    env = d.environment
    out: list[CheckResult] = []
    shown = ", ".join(f"{k}={v}" for k, v in env.items()
                      if k.startswith(("NCCL_", "TORCH_", "MASTER_", "GLOO_"))
                      or k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"))
    out.append(_r("DR600", "info", "Distributed environment variables",
                  found=shown or "none set", why="What NCCL, gloo and torch.distributed will "
                  "read here (secrets redacted)."))
    handling = env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", env.get("NCCL_ASYNC_ERROR_HANDLING"))
    why = ("With async error handling, a collective that times out ends the process, so the "
           "job fails and can restart; without it, the watchdog logs the timeout and every rank "
           "stays blocked.")
    if handling == "0":
        out.append(_r("DR601", "warn", "NCCL async error handling is off",
                      found="TORCH_NCCL_ASYNC_ERROR_HANDLING=0", wanted="1 or 3", why=why,
                      fix="export TORCH_NCCL_ASYNC_ERROR_HANDLING=1", source=TORCH_ENV_SOURCE))
    elif handling is None:
        out.append(_r("DR601", "info", "NCCL async error handling left to torch's default",
                      found="unset", wanted="1 (explicit; older torch defaults to off)", why=why,
                      fix="export TORCH_NCCL_ASYNC_ERROR_HANDLING=1", source=TORCH_ENV_SOURCE))
    else:
        out.append(_r("DR601", "ok", "NCCL async error handling",
                      found=f"TORCH_NCCL_ASYNC_ERROR_HANDLING={handling}",
                      source=TORCH_ENV_SOURCE))
    debug = env.get("NCCL_DEBUG")
    if debug is None:
        out.append(_r("DR602", "info", "NCCL_DEBUG unset", found="unset",
                      wanted="INFO while debugging a hang",
                      why="NCCL's INFO log names the transport, interfaces and the rank that "
                          "failed; without it, a NCCL hang leaves almost nothing in the log.",
                      fix="export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET",
                      source=NCCL_ENV_SOURCE))
    if env.get("TORCH_DISTRIBUTED_DEBUG", "").upper() == "DETAIL":
        out.append(_r("DR605", "warn", "TORCH_DISTRIBUTED_DEBUG=DETAIL is set",
                      found="DETAIL", wanted="unset or INFO outside short debugging sessions",
                      why="DETAIL wraps every collective in checks that slow training, and "
                          "(seen with torch 2.13 on gloo) can crash ranks before the first step.",
                      fix="unset TORCH_DISTRIBUTED_DEBUG", source=DIST_SOURCE))
    disabled = [k for k in ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_SHM_DISABLE")
                if env.get(k) == "1"]
    if disabled:
        out.append(_r("DR606", "info", "NCCL transports disabled",
                      found=", ".join(f"{k}=1" for k in disabled),
                      wanted="unset unless working around a known fault",
                      why="Often left over from a debugging session: NCCL then takes slower "
                          "paths (sockets instead of NVLink/InfiniBand), and long collectives "
                          "can pass their timeout.",
                      fix="unset " + " ".join(disabled), source=NCCL_ENV_SOURCE))
    for name, exact in (("NCCL_SOCKET_IFNAME", False), ("GLOO_SOCKET_IFNAME", True)):
        spec = env.get(name)
        if spec and d.interfaces and not _matches_interface(spec, d.interfaces, exact):
            out.append(_r("DR607", "problem", f"{name} names no interface of this node",
                          found=f"{name}={spec}", wanted=f"one of {', '.join(d.interfaces)}",
                          why="The library finds no interface to bind, so ranks cannot reach "
                              "each other and wait at rendezvous or their first collective.",
                          fix=f"export {name}=<one of: {', '.join(d.interfaces)}>",
                          source=NCCL_ENV_SOURCE))
    return out


def _master(d: Distributed) -> list[CheckResult]:
    out: list[CheckResult] = []
    if d.master_addr is not None:
        title = f"MASTER_ADDR {d.master_addr} resolves"
        if d.master_addr_resolves_to:
            out.append(_r("DR603", "ok", title,
                          found=", ".join(d.master_addr_resolves_to[:4])))
        else:
            out.append(_r("DR603", "problem", f"MASTER_ADDR {d.master_addr} does not resolve",
                          found=d.master_addr_error or "no address", wanted="a resolvable host",
                          why="Ranks cannot reach the TCPStore: they wait in "
                              "init_process_group until the rendezvous timeout.",
                          fix=f"getent hosts {d.master_addr}   (fix DNS or /etc/hosts, or set "
                              "MASTER_ADDR to rank 0's IP address)", source=DIST_SOURCE))
    if d.master_port is not None:
        title = f"MASTER_PORT {d.master_port}"
        if d.master_port_error:
            out.append(_r("DR604", "problem", f"{title} is not a usable port",
                          found=d.master_port_error, wanted="a free TCP port 1024-65535",
                          why="The store cannot listen, and every rank waits for it.",
                          fix="export MASTER_PORT=29500", source=DIST_SOURCE))
        elif d.master_port_free is False:
            out.append(_r("DR604", "warn", f"{title} is already in use here",
                          found="a process listens on it", wanted="free",
                          why="Often a previous job's TCPStore still alive: rank 0 fails to "
                              "listen, or other ranks join the stale store and wait forever.",
                          fix=f"ss -ltnp 'sport = :{d.master_port}'   (end that process, or "
                              "pick another MASTER_PORT)", source=DIST_SOURCE))
        elif d.master_port_free:
            out.append(_r("DR604", "ok", f"{title} is free", found="free"))
        else:
            out.append(_r("DR604", "info", f"{title} not tested",
                          found="MASTER_ADDR is another host",
                          why="Only rank 0's host can tell whether the port is free."))
    return out


def check(facts: Facts) -> list[CheckResult]:
    """Distributed environment checks."""
    d = facts.distributed
    return _variables(d) + _master(d)
