from __future__ import annotations

from django.contrib.auth import get_user_model
from django.test import Client

from config.crypto import encrypt_json
from tests.factories import IntegrationFactory


def test_the_admin_never_shows_secrets(team) -> None:
    integration = IntegrationFactory(
        team=team,
        name="lf",
        platform="langfuse",
        config={"publicKey": "pk-lf-visible", "host": "http://127.0.0.1:3000"},
        secrets=encrypt_json({"secretKey": "sk-lf-hidden-value-1234"}),
    )
    admin = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.force_login(admin)

    listing = client.get("/admin/integrations/integration/")
    change = client.get(f"/admin/integrations/integration/{integration.pk}/change/")

    assert listing.status_code == 200 and change.status_code == 200
    for response in (listing, change):
        assert "sk-lf-hidden-value-1234" not in response.content.decode()
    page = change.content.decode()
    assert "pk-lf-visible" in page
    assert "****1234" in page
    assert "secretKey" in page
