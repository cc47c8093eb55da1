"""Distributed environment: NCCL_* and TORCH_* variables worth setting or unsetting, the
network interfaces they name, MASTER_ADDR resolvable and MASTER_PORT free."""

from __future__ import annotations

from collections.abc import Iterator

from hangdoctor.doctor.check import Check, Example
from hangdoctor.doctor.examples import node
from hangdoctor.doctor.facts import Facts
from hangdoctor.doctor.result import CheckResult
from hangdoctor.i18n import _

TORCH_ENV_SOURCE = "https://pytorch.org/docs/stable/torch_nccl_environment_variables.html"
NCCL_ENV_SOURCE = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
DIST_SOURCE = "https://pytorch.org/docs/stable/distributed.html"
INTERFACES = ("eth0", "lo", "docker0")


def _env(**environment: str) -> Facts:
    """A node with these variables set (and the usual interfaces)."""
    return node(distributed={"environment": environment, "interfaces": INTERFACES})


def _master(**fields: object) -> Facts:
    return node(distributed=fields)


def matches_interface(spec: str, interfaces: tuple[str, ...], exact: bool) -> bool:
    """Whether NCCL_SOCKET_IFNAME-style `spec` selects at least one interface (NCCL: a
    comma-separated list of prefixes, `=` for exact names, `^` to exclude)."""
    if spec.startswith("^"):
        excluded = [p for p in spec[1:].split(",") if p]
        return any(not any(i.startswith(p) for p in excluded) for i in interfaces)
    if spec.startswith("="):
        spec, exact = spec[1:], True
    wanted = [p for p in spec.split(",") if p]
    return any((i == p) if exact else i.startswith(p) for i in interfaces for p in wanted)


class EnvironmentVariables(Check):
    """NCCL_*, TORCH_*, GLOO_*, MASTER_* and rank variables (secrets redacted)

    Why: NCCL, gloo and torch.distributed change behaviour through environment variables (timeouts,
    transports, interfaces, debug output, the rendezvous address). A variable left over from another
    job or a debugging session is a frequent, invisible cause of hangs.

    Instead: Review the list and unset what the job does not need; set the variables for a job in
    its launch script, not in a shell profile every job inherits.
    """

    id = "DR600"
    area = "distributed"
    informs_only = True
    quiet_on = (
        Example("none set", lambda: node(), "info"),
        Example(
            "a torchrun rank",
            lambda: _env(RANK="3", WORLD_SIZE="8", MASTER_ADDR="10.0.0.1"),
            "info",
        ),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        shown = ", ".join(
            f"{k}={v}"
            for k, v in facts.distributed.environment.items()
            if k.startswith(("NCCL_", "TORCH_", "MASTER_", "GLOO_"))
            or k in ("RANK", "WORLD_SIZE", "LOCAL_RANK")
        )
        yield self.result(
            "info",
            _("Distributed environment variables"),
            found=shown or _("none set"),
            why=_("What NCCL, gloo and torch.distributed will read here (secrets redacted)."),
        )


class AsyncErrorHandling(Check):
    """TORCH_NCCL_ASYNC_ERROR_HANDLING (0 `warn`, unset `info`)

    Why: With async error handling, a collective that times out ends the process, so the job fails
    and can restart. Set to 0, the watchdog only logs the timeout and every rank stays blocked in
    the collective forever.

    Instead: Leave `TORCH_NCCL_ASYNC_ERROR_HANDLING` unset (the default ends the process) or `export
    TORCH_NCCL_ASYNC_ERROR_HANDLING=1`; never set it to 0.
    """

    id = "DR601"
    area = "distributed"
    fires_on = (
        Example("turned off", lambda: _env(TORCH_NCCL_ASYNC_ERROR_HANDLING="0"), "warn"),
        Example(
            "turned off under its old name", lambda: _env(NCCL_ASYNC_ERROR_HANDLING="0"), "warn"
        ),
    )
    quiet_on = (
        Example("on", lambda: _env(TORCH_NCCL_ASYNC_ERROR_HANDLING="1"), "ok"),
        Example("unset", lambda: node(), "info"),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        env = facts.distributed.environment
        handling = env.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", env.get("NCCL_ASYNC_ERROR_HANDLING"))
        why = _(
            "With async error handling, a collective that times out ends the process, so the "
            "job fails and can restart; without it, the watchdog logs the timeout and every "
            "rank stays blocked."
        )
        fix = "export TORCH_NCCL_ASYNC_ERROR_HANDLING=1"
        if handling == "0":
            yield self.result(
                "warn",
                _("NCCL async error handling is off"),
                found="TORCH_NCCL_ASYNC_ERROR_HANDLING=0",
                wanted=_("1 or 3"),
                why=why,
                fix=fix,
                source=TORCH_ENV_SOURCE,
            )
        elif handling is None:
            yield self.result(
                "info",
                _("NCCL async error handling left to torch's default"),
                found=_("unset"),
                wanted=_("1 (explicit; older torch defaults to off)"),
                why=why,
                fix=fix,
                source=TORCH_ENV_SOURCE,
            )
        else:
            yield self.result(
                "ok",
                _("NCCL async error handling"),
                found=f"TORCH_NCCL_ASYNC_ERROR_HANDLING={handling}",
                source=TORCH_ENV_SOURCE,
            )


class NcclDebugUnset(Check):
    """NCCL_DEBUG unset (`info`: set INFO while debugging)

    Why: NCCL's INFO log names the transport, the interfaces and the rank that failed. Without it, a
    NCCL hang leaves almost nothing in the log, and the run has to be repeated to find out where it
    stopped.

    Instead: While debugging a hang, `export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET`; unset it
    again for production runs.
    """

    id = "DR602"
    area = "distributed"
    informs_only = True
    quiet_on = (
        Example("unset", lambda: node(), "info"),
        Example("set", lambda: _env(NCCL_DEBUG="INFO"), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        if "NCCL_DEBUG" in facts.distributed.environment:
            return
        yield self.result(
            "info",
            _("NCCL_DEBUG unset"),
            found=_("unset"),
            wanted=_("INFO while debugging a hang"),
            why=_(
                "NCCL's INFO log names the transport, interfaces and the rank "
                "that failed; without it, a NCCL hang leaves almost nothing in "
                "the log."
            ),
            fix="export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET",
            source=NCCL_ENV_SOURCE,
        )


class MasterAddrResolves(Check):
    """MASTER_ADDR resolves (bounded in time)

    Why: Every rank connects to the TCPStore at MASTER_ADDR. When the name does not resolve (DNS,
    `/etc/hosts`), ranks cannot reach the store and wait in `init_process_group` until the
    rendezvous timeout.

    Instead: Check `getent hosts <MASTER_ADDR>` on every node; fix DNS or `/etc/hosts`, or set
    MASTER_ADDR to rank 0's IP address.
    """

    id = "DR603"
    area = "distributed"
    fires_on = (
        Example(
            "a name DNS does not know",
            lambda: _master(
                master_addr="no-such-host.invalid",
                master_addr_resolves_to=(),
                master_addr_error="Name or service not known",
            ),
            "problem",
        ),
    )
    quiet_on = (
        Example(
            "resolves",
            lambda: _master(master_addr="node-0", master_addr_resolves_to=("10.0.0.1",)),
            "ok",
        ),
        Example("unset", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        d = facts.distributed
        if d.master_addr is None:
            return
        if d.master_addr_resolves_to:
            yield self.result(
                "ok",
                _("MASTER_ADDR {addr} resolves", addr=d.master_addr),
                found=", ".join(d.master_addr_resolves_to[:4]),
            )
            return
        yield self.result(
            "problem",
            _("MASTER_ADDR {addr} does not resolve", addr=d.master_addr),
            found=d.master_addr_error or _("no address"),
            wanted=_("a resolvable host"),
            why=_(
                "Ranks cannot reach the TCPStore: they wait in init_process_group until the "
                "rendezvous timeout."
            ),
            fix=_(
                "getent hosts {addr}   (fix DNS or /etc/hosts, or set MASTER_ADDR to "
                "rank 0's IP address)",
                addr=d.master_addr,
            ),
            source=DIST_SOURCE,
        )


class MasterPort(Check):
    """MASTER_PORT is a port and free here (when MASTER_ADDR is this host or unset)

    Why: Rank 0's TCPStore listens on MASTER_PORT. When the port is taken (often a previous job's
    store still alive), rank 0 fails to listen, or other ranks join the stale store and wait
    forever.

    Instead: Find the holder (`ss -ltnp 'sport = :<MASTER_PORT>'`) and end it, or pick another
    MASTER_PORT for each job.
    """

    id = "DR604"
    area = "distributed"
    fires_on = (
        Example(
            "not a number",
            lambda: _master(
                master_port="notaport", master_port_error="'notaport' is not a TCP port number"
            ),
            "problem",
        ),
        Example(
            "a stale store still listens",
            lambda: _master(master_port="29500", master_port_free=False),
            "warn",
        ),
    )
    quiet_on = (
        Example("free", lambda: _master(master_port="29500", master_port_free=True), "ok"),
        Example(
            "on another host",
            lambda: _master(
                master_addr="10.0.0.1",
                master_addr_resolves_to=("10.0.0.1",),
                master_addr_is_local=False,
                master_port="29500",
            ),
            "info",
        ),
        Example("unset", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        d = facts.distributed
        if d.master_port is None:
            return
        port = d.master_port
        if d.master_port_error:
            yield self.result(
                "problem",
                _("MASTER_PORT {port} is not a usable port", port=port),
                found=d.master_port_error,
                wanted=_("a free TCP port 1024-65535"),
                why=_("The store cannot listen, and every rank waits for it."),
                fix="export MASTER_PORT=29500",
                source=DIST_SOURCE,
            )
        elif d.master_port_free is False:
            yield self.result(
                "warn",
                _("MASTER_PORT {port} is already in use here", port=port),
                found=_("a process listens on it"),
                wanted=_("free"),
                why=_(
                    "Often a previous job's TCPStore still alive: rank 0 fails to listen, or "
                    "other ranks join the stale store and wait forever."
                ),
                fix=_(
                    "ss -ltnp 'sport = :{port}'   (end that process, or pick another MASTER_PORT)",
                    port=port,
                ),
                source=DIST_SOURCE,
            )
        elif d.master_port_free:
            yield self.result("ok", _("MASTER_PORT {port} is free", port=port), found=_("free"))
        else:
            yield self.result(
                "info",
                _("MASTER_PORT {port} not tested", port=port),
                found=_("MASTER_ADDR is another host"),
                why=_("Only rank 0's host can tell whether the port is free."),
            )


class DetailDebugLeftOn(Check):
    """TORCH_DISTRIBUTED_DEBUG=DETAIL left on

    Why: `TORCH_DISTRIBUTED_DEBUG=DETAIL` wraps every collective in checks across ranks that slow
    training, and can crash ranks before the first step on some versions. It is a tool for a small
    debugging run, not for production.

    Instead: Unset `TORCH_DISTRIBUTED_DEBUG` (or set it to `OFF`) outside debugging runs.
    """

    id = "DR605"
    area = "distributed"
    fires_on = (Example("DETAIL", lambda: _env(TORCH_DISTRIBUTED_DEBUG="DETAIL"), "warn"),)
    quiet_on = (
        Example("INFO", lambda: _env(TORCH_DISTRIBUTED_DEBUG="INFO"), None),
        Example("unset", lambda: node(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        if facts.distributed.environment.get("TORCH_DISTRIBUTED_DEBUG", "").upper() != "DETAIL":
            return
        yield self.result(
            "warn",
            _("TORCH_DISTRIBUTED_DEBUG=DETAIL is set"),
            found="DETAIL",
            wanted=_("unset or INFO outside short debugging sessions"),
            why=_(
                "DETAIL wraps every collective in checks that slow training, and (seen with "
                "torch 2.13 on gloo) can crash ranks before the first step."
            ),
            fix="unset TORCH_DISTRIBUTED_DEBUG",
            source=DIST_SOURCE,
        )


class TransportsDisabled(Check):
    """NCCL_P2P/IB/SHM_DISABLE left on

    Why: `NCCL_P2P_DISABLE`, `NCCL_IB_DISABLE` and `NCCL_SHM_DISABLE` are often left over from a
    debugging session: NCCL then takes slower paths (sockets instead of NVLink or InfiniBand), and
    long collectives can pass their timeout.

    Instead: Unset the `NCCL_*_DISABLE` variables unless the node needs them (and then set them in
    that job's launch script only).
    """

    id = "DR606"
    area = "distributed"
    # Left on, it is worth a look; set on purpose, it works around a known fault.
    informs_only = True
    quiet_on = (
        Example("P2P and IB off", lambda: _env(NCCL_P2P_DISABLE="1", NCCL_IB_DISABLE="1"), "info"),
        Example("none off", lambda: _env(NCCL_P2P_DISABLE="0"), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        env = facts.distributed.environment
        disabled = [
            k
            for k in ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE", "NCCL_SHM_DISABLE")
            if env.get(k) == "1"
        ]
        if not disabled:
            return
        yield self.result(
            "info",
            _("NCCL transports disabled"),
            found=", ".join(f"{k}=1" for k in disabled),
            wanted=_("unset unless working around a known fault"),
            why=_(
                "Often left over from a debugging session: NCCL then takes slower paths "
                "(sockets instead of NVLink/InfiniBand), and long collectives can pass their "
                "timeout."
            ),
            fix="unset " + " ".join(disabled),
            source=NCCL_ENV_SOURCE,
        )


class SocketInterface(Check):
    """NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME name no interface of this node

    Why: `NCCL_SOCKET_IFNAME` and `GLOO_SOCKET_IFNAME` tell the libraries which network interface to
    bind. When they name no interface of this node, the library finds nothing to bind, and ranks
    cannot reach each other: they wait at rendezvous or in their first collective.

    Instead: Set them to an interface that exists on every node and connects them (`ip -br addr`
    lists them), e.g. `export NCCL_SOCKET_IFNAME=eth0`, or leave them unset.
    """

    id = "DR607"
    area = "distributed"
    fires_on = (
        Example(
            "ib on a node without InfiniBand", lambda: _env(NCCL_SOCKET_IFNAME="ib"), "problem"
        ),
        Example("gloo wants an exact name", lambda: _env(GLOO_SOCKET_IFNAME="eth"), "problem"),
        Example(
            "everything excluded", lambda: _env(NCCL_SOCKET_IFNAME="^eth,lo,docker"), "problem"
        ),
    )
    quiet_on = (
        Example("a prefix", lambda: _env(NCCL_SOCKET_IFNAME="eth"), None),
        Example("an exclusion", lambda: _env(NCCL_SOCKET_IFNAME="^docker,lo"), None),
        Example(
            "an exact name",
            lambda: _env(NCCL_SOCKET_IFNAME="=eth0", GLOO_SOCKET_IFNAME="eth0"),
            None,
        ),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        d = facts.distributed
        for name, exact in (("NCCL_SOCKET_IFNAME", False), ("GLOO_SOCKET_IFNAME", True)):
            spec = d.environment.get(name)
            if not spec or not d.interfaces or matches_interface(spec, d.interfaces, exact):
                continue
            yield self.result(
                "problem",
                _("{variable} names no interface of this node", variable=name),
                found=f"{name}={spec}",
                wanted=_("one of {interfaces}", interfaces=", ".join(d.interfaces)),
                why=_(
                    "The library finds no interface to bind, so ranks cannot reach each other "
                    "and wait at rendezvous or their first collective."
                ),
                fix=_(
                    "export {variable}=<one of: {interfaces}>",
                    variable=name,
                    interfaces=", ".join(d.interfaces),
                ),
                source=NCCL_ENV_SOURCE,
            )


JAX_DISTRIBUTED_SOURCE = "https://docs.jax.dev/en/latest/multi_process.html"
_COORDINATOR = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")


def _jax_env(**environment: str) -> Facts:
    return node(
        versions={"jax": "0.10.2", "jaxlib": "0.10.2"}, frameworks={"environment": environment}
    )


class JaxCoordinatorEnvironment(Check):
    """JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID complete and in range

    Why: `jax.distributed.initialize()` reads the coordinator's address from the environment; the
    coordinator then waits, by default for five minutes, until every one of the processes has
    connected. A process id outside the count, or a count larger than the processes started, is a
    job whose first line waits for a process that never comes.

    Instead: Set all three for every process (ids 0 to count-1, each once), or none and let the
    cluster (SLURM, Kubernetes, Open MPI) be detected.
    """

    id = "DR608"
    area = "distributed"
    fires_on = (
        Example(
            "id beyond the count",
            lambda: _jax_env(
                JAX_COORDINATOR_ADDRESS="10.0.0.1:1234", JAX_NUM_PROCESSES="2", JAX_PROCESS_ID="2"
            ),
            "problem",
        ),
        Example(
            "a count without an id",
            lambda: _jax_env(JAX_COORDINATOR_ADDRESS="10.0.0.1:1234", JAX_NUM_PROCESSES="4"),
            "warn",
        ),
    )
    quiet_on = (
        Example(
            "complete",
            lambda: _jax_env(
                JAX_COORDINATOR_ADDRESS="10.0.0.1:1234", JAX_NUM_PROCESSES="2", JAX_PROCESS_ID="1"
            ),
            "ok",
        ),
        Example("none set", lambda: _jax_env(), None),
    )

    def check(self, facts: Facts) -> Iterator[CheckResult]:
        env = facts.frameworks.environment
        given = {name: env[name] for name in _COORDINATOR if name in env}
        if not given:
            return
        found = ", ".join(f"{name}={value}" for name, value in given.items())
        count, ident = given.get("JAX_NUM_PROCESSES", ""), given.get("JAX_PROCESS_ID", "")
        if count.isdigit() and ident.isdigit() and int(ident) >= int(count):
            yield self.result(
                "problem",
                _("JAX_PROCESS_ID is not below JAX_NUM_PROCESSES"),
                found=found,
                wanted=_("a process id from 0 to the count minus one"),
                why=_(
                    "jax.distributed.initialize() refuses the id, or the coordinator waits "
                    "for a process id that no process has."
                ),
                fix=_("give each process its own id below JAX_NUM_PROCESSES"),
                source=JAX_DISTRIBUTED_SOURCE,
            )
        elif len(given) < len(_COORDINATOR):
            missing = ", ".join(name for name in _COORDINATOR if name not in given)
            yield self.result(
                "warn",
                _("JAX's coordinator environment is incomplete"),
                found=found,
                wanted=_("also {missing}", missing=missing),
                why=_(
                    "What is not set is detected from the cluster, or jax.distributed"
                    ".initialize() needs it as an argument; a guess that differs between "
                    "processes leaves the coordinator waiting."
                ),
                fix=_("set all three for every process, or none"),
                source=JAX_DISTRIBUTED_SOURCE,
            )
        else:
            yield self.result("ok", _("JAX's coordinator environment"), found=found)
