"""What the integrations page tests share: a webhook integration with a secret, delivery rows,
and the add form as a browser posts it."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from delivery.models import Delivery
from integrations.services import IntegrationInput, integration_create

from ..factories import TraceFactory

SECRET = "whsec-very-secret-value-7788"
MANAGERS = ["owner", "admin"]
NOT_MANAGERS = ["member", "viewer"]


def make_hook(team):
    """A webhook integration with a signing secret and a header, as the API would make it."""
    return integration_create(
        team_id=team.pk,
        data=IntegrationInput(
            name="orders-hook",
            platform="webhook",
            config={"url": "http://127.0.0.1:9/hook", "secret": SECRET, "headers": {"X-Team": "search"}},
            default_tags=["relay"],
            metadata_mapping={"customer": "user"},
            timeout_s=5.0,
            retry_policy={"max_attempts": 3},
        ),
        actor="test",
    )


def delivery(team, integration, status, *, name=None, age=timedelta(0), error="", code=None, resolved=True):
    row = Delivery.objects.create(
        team=team,
        trace=TraceFactory(team=team),
        destination=name or integration.name,
        integration=integration if resolved else None,
        status=status,
        last_error=error,
        last_status_code=code,
    )
    if age:
        Delivery.objects.filter(pk=row.pk).update(created_at=timezone.now() - age)
    return row


def webhook_form(**changes):
    data = {
        "name": "my-hook",
        "enabled": "on",
        "config_url": "http://127.0.0.1:9/hook",
        "config_headers": "",
        "config_secret": "",
        "default_tags": "",
        "metadata_mapping": "",
        "timeout_s": "",
        "retry_max_attempts": "",
        "retry_base_delay_s": "",
        "retry_max_delay_s": "",
    }
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}
