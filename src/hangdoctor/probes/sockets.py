"""Socket endpoints from /proc/PID/net, so that a thread blocked reading socket:[inode] can be
told apart as "reading from 10.0.0.5:443" or "waiting for a connection on :29500".

Line formats: https://www.kernel.org/doc/html/latest/networking/proc_net_tcp.html
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from pathlib import Path

from hangdoctor import bounded
from hangdoctor.evidence.model import ProcessEvidence, SocketEndpoint

_TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}


def _address(hex_address: str) -> str:
    host_hex, port_hex = hex_address.split(":")
    raw = bytes.fromhex(host_hex)
    # The kernel prints each 32-bit word in host (little-endian) order.
    host_bytes = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    host = ipaddress.ip_address(host_bytes)
    if isinstance(host, ipaddress.IPv6Address) and host.ipv4_mapped:
        host = host.ipv4_mapped
    text = f"[{host}]" if host.version == 6 else str(host)
    return f"{text}:{int(port_hex, 16)}"


def _rows(path: Path) -> list[list[str]]:
    """The fields of each line of a /proc/net table, header skipped; none if unreadable."""
    try:
        return [line.split() for line in path.read_text(errors="replace").splitlines()[1:]]
    except OSError:
        return []


def _inet(path: Path, protocol: str, wanted: set[int]) -> list[SocketEndpoint]:
    found = []
    for fields in _rows(path):
        if len(fields) < 10 or not fields[9].isdecimal() or int(fields[9]) not in wanted:
            continue
        state = _TCP_STATES.get(fields[3]) if protocol.startswith("tcp") else None
        try:
            local, remote = _address(fields[1]), _address(fields[2])
        except ValueError:  # not the kernel's hex address:port (a table changed under us)
            continue
        found.append(
            SocketEndpoint(
                inode=int(fields[9]), protocol=protocol, local=local, remote=remote, state=state
            )
        )
    return found


def unix_peers(listing: str) -> dict[int, int]:
    """Inode -> its peer's inode, from `ss -x -n -H` (`u_str ESTAB 0 0 * 280738 * 280739`).
    /proc/net/unix does not say which socket of a pair is whose peer; the kernel's sock_diag,
    which `ss` reads, does."""
    peers = {}
    for line in listing.splitlines():
        fields = line.split()
        connected = len(fields) >= 8 and fields[5].isdecimal() and fields[7].isdecimal()
        if connected and int(fields[7]):
            peers[int(fields[5])] = int(fields[7])
    return peers


def _read_unix_peers() -> dict[int, int]:
    """Peers of the host's connected unix sockets; none where `ss` is missing or slow."""
    done, _error = bounded.run("sockets", ["ss", "-x", "-n", "-H"], timeout_s=2.0)
    if done is None or done.returncode != 0:
        return {}
    return unix_peers(done.stdout)


def _unix(path: Path, wanted: set[int]) -> list[SocketEndpoint]:
    found = []
    peers: dict[int, int] | None = None
    for fields in _rows(path):
        if len(fields) < 7 or not fields[6].isdecimal() or int(fields[6]) not in wanted:
            continue
        if peers is None:
            peers = _read_unix_peers()
        found.append(
            SocketEndpoint(
                inode=int(fields[6]),
                protocol="unix",
                path=fields[7] if len(fields) > 7 else None,
                peer=peers.get(int(fields[6])),
            )
        )
    return found


def socket_inodes(processes: Iterable[ProcessEvidence]) -> set[int]:
    """The inodes of the sockets these processes hold open (`socket:[N]` descriptors)."""
    return {
        int(f.target[len("socket:[") : -1])
        for p in processes
        for f in p.open_files
        if f.target.startswith("socket:[") and f.target.endswith("]")
    }


def read_sockets(pid: int, inodes: set[int]) -> list[SocketEndpoint]:
    """Endpoints of the given socket inodes, as seen from `pid`'s network namespace."""
    if not inodes:
        return []
    net = Path(f"/proc/{pid}/net")
    endpoints: list[SocketEndpoint] = []
    for name in ("tcp", "tcp6", "udp", "udp6"):
        endpoints.extend(_inet(net / name, name, inodes))
    endpoints.extend(_unix(net / "unix", inodes))
    return endpoints
