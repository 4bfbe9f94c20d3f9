"""A real SMTP server on 127.0.0.1 (aiosmtpd) that keeps what it is sent."""

import socket
from collections.abc import Iterator

import pytest
from aiosmtpd.controller import Controller


class Received:
    """The messages the server accepted, as the bytes the client sent."""

    def __init__(self) -> None:
        self.messages: list[bytes] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's hook name)
        self.messages.append(envelope.content)
        return "250 OK"


def free_port() -> int:
    """A port nothing listens on (yet)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def smtp_server(settings) -> Iterator[Received]:
    """Django's SMTP backend pointed at a fresh local server, without TLS."""
    received = Received()
    controller = Controller(received, hostname="127.0.0.1", port=free_port())
    controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = controller.port
    settings.EMAIL_USE_TLS = False
    yield received
    controller.stop()
