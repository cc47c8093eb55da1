"""/proc/net parsing, on recorded lines and on a real socket of this process."""

from __future__ import annotations

import os
import socket

from hangdoctor.probes.sockets import _address, read_sockets


def test_ipv4_and_ipv6_addresses():
    assert _address("0100007F:1F90") == "127.0.0.1:8080"
    assert _address("00000000000000000000000001000000:0016") == "[::1]:22"
    assert _address("0000000000000000FFFF00000100007F:0050") == "127.0.0.1:80"


def test_a_real_listening_and_connected_socket():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    client = socket.create_connection(server.getsockname())
    try:
        inodes = {}
        for sock in (server, client):
            target = os.readlink(f"/proc/self/fd/{sock.fileno()}")
            inodes[sock] = int(target[len("socket:[") : -1])
        found = {e.inode: e for e in read_sockets(os.getpid(), set(inodes.values()))}
        assert found[inodes[server]].state == "LISTEN"
        assert found[inodes[client]].state == "ESTABLISHED"
        assert found[inodes[client]].remote == f"127.0.0.1:{server.getsockname()[1]}"
    finally:
        client.close()
        server.close()
