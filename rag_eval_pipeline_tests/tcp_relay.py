"""A TCP listener on 127.0.0.1 relaying each connection to a unix socket, in a thread: lets a
client that must reach its server over TCP (a host name, a port) talk to a server that listens
on a unix socket only (the tests' PostgreSQL)."""

from __future__ import annotations

import contextlib
import selectors
import socket
import socketserver
import threading
from collections.abc import Iterator
from pathlib import Path


def _pump(client: socket.socket, server: socket.socket) -> None:
    """Copy bytes both ways until either side closes."""
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ, server)
        selector.register(server, selectors.EVENT_READ, client)
        while True:
            for key, _ in selector.select():
                data = key.fileobj.recv(65536)  # type: ignore[union-attr]
                if not data:
                    return
                key.data.sendall(data)


class _Listener(socketserver.ThreadingTCPServer):
    daemon_threads = True


@contextlib.contextmanager
def tcp_relay(unix_socket: Path) -> Iterator[tuple[int, list[int]]]:
    """Listen on a free port of 127.0.0.1 and relay every connection to `unix_socket`; yields
    the port and the list of the connections' client ports (one added per connection)."""
    accepted: list[int] = []

    class Relay(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            accepted.append(self.client_address[1])
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
                server.connect(str(unix_socket))
                _pump(self.request, server)

    with _Listener(("127.0.0.1", 0), Relay) as listener:
        thread = threading.Thread(target=listener.serve_forever, daemon=True)
        thread.start()
        try:
            yield listener.server_address[1], accepted
        finally:
            listener.shutdown()
