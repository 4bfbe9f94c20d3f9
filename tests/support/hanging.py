"""A server that accepts connections and never answers: a vendor that hangs."""

import contextlib
import socket
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def hanging_server() -> Iterator[tuple[str, list[socket.socket]]]:
    """Yields its base URL (http://127.0.0.1:port) and the connections it holds open."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.1)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", held
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()
