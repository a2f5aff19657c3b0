"""A real SMTP server on loopback (aiosmtpd) that collects what Django sends: password resets,
invitations, reports with attachments."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from typing import Any


@dataclass
class Mailbox:
    messages: list[Message] = field(default_factory=list)
    port: int = 0

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # aiosmtpd's hook
        message = message_from_bytes(envelope.content)
        message["X-Envelope-To"] = ", ".join(envelope.rcpt_tos)
        self.messages.append(message)
        return "250 Message accepted for delivery"

    def wait_for(self, to: str, timeout: float = 10) -> Message:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in self.messages:
                if to in message["X-Envelope-To"]:
                    return message
            time.sleep(0.05)
        raise AssertionError(f"no mail to {to} arrived; got {[m['To'] for m in self.messages]}")

    @staticmethod
    def body(message: Message) -> str:
        payload = message.get_payload(decode=True)
        assert isinstance(payload, bytes)
        return payload.decode()

    @staticmethod
    def attachments(message: Message) -> dict[str, tuple[str, bytes]]:
        """File name → (content type, bytes)."""
        out = {}
        for part in message.walk():
            name = part.get_filename()
            if name:
                payload = part.get_payload(decode=True)
                assert isinstance(payload, bytes)
                out[name] = (part.get_content_type(), payload)
        return out


@contextmanager
def smtp_server() -> Iterator[Mailbox]:
    from aiosmtpd.controller import Controller

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    mailbox = Mailbox(port=port)
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield mailbox
    finally:
        controller.stop()


def use_smtp(settings: Any, mailbox: Mailbox) -> None:
    """Point Django's mail (pytest-django's ``settings``) at ``mailbox``."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", mailbox.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
