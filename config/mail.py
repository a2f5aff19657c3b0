"""What mail sent without a request needs: whether it reaches anyone at all (EMAIL_URL), and absolute
links into the dashboard (TRACERELAY_PUBLIC_URL; a page answering a request builds its links from
the request's host instead, as password resets and invitations do)."""

from __future__ import annotations

from django.conf import settings

# Backends that accept a message and deliver it to nobody: what to say instead of "sent".
NOT_DELIVERED = {
    "django.core.mail.backends.console.EmailBackend": "no mail server is configured (EMAIL_URL); written to the log",
    "django.core.mail.backends.dummy.EmailBackend": "mail is switched off (EMAIL_URL); nothing was sent",
}


def undelivered_reason() -> str | None:
    """Why a message handed to the mail backend reaches no inbox, or None when it goes to a server."""
    return NOT_DELIVERED.get(settings.EMAIL_BACKEND)


def public_url(path: str) -> str:
    """``/alerts/7`` → ``https://tracerelay.example.com/alerts/7``."""
    return settings.TRACERELAY_PUBLIC_URL + path
