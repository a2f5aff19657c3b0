"""`manage.py bootstrap`: what `bin/run` does on every start after migrating.

The first time (no team yet) it creates the demo team, an admin login, a production API key and a
few plants, and prints them. Later starts create nothing: they say where things are and how to
make another key. The password can be chosen with TRACERELAY_ADMIN_PASSWORD.
"""

from __future__ import annotations

import json
import os
import secrets
from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import ApiKey, Environment, Membership, Role, Team
from accounts.services import api_key_create
from traces.models import Plant

DEMO_TEAM = "demo"
ADMIN_USERNAME = "admin"
ADMIN_EMAIL = "admin@localhost"
DEMO_PLANTS = [("Monstera", "tropical"), ("Fiddle-leaf fig", "tropical"), ("Aloe vera", "succulent"), ("Basil", "herb")]


class Command(BaseCommand):
    help = "Create the demo team, admin login, API key and plants on first start; report them."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="Where the server listens.")
        parser.add_argument(
            "--json", action="store_true", help="Print what was made as one JSON object (bin/run's first screen)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        url = options["url"].rstrip("/")
        made = bootstrap()
        if options["json"]:
            self.stdout.write(json.dumps({"url": url, **made}))
            return
        out = self.stdout.write
        out("")
        out(f"tracerelay is running at {url}/")
        out(f"  dashboard    {url}/login   (as {ADMIN_USERNAME} or {ADMIN_EMAIL}; new accounts at {url}/signup)")
        out(f"  API docs     {url}/api/v1/docs/")
        if made["password"]:
            out(f"  admin        {url}/admin/   login: {ADMIN_USERNAME} / {made['password']}")
        else:
            out(f"  admin        {url}/admin/   (password shown on first start; change it with")
            out(f"               .venv/bin/python manage.py changepassword {ADMIN_USERNAME})")
        if made["key"]:
            out(f"  API key      {made['key']}   (production, team '{DEMO_TEAM}'; shown once, copy it now)")
            out(f'  try it       curl -H "Authorization: Bearer {made["key"]}" {url}/plants')
        else:
            out(f"  API keys     {made['active_keys']} active (keys are shown only when made). Make another with")
            out(f"               .venv/bin/python manage.py apikey create --team {DEMO_TEAM} --environment production")
        out("")


def bootstrap() -> dict[str, Any]:
    """On the first start (no team yet) the demo team, the admin login, a production key and a few
    plants; what was made (the password and key only then: they are stored hashed)."""
    User = get_user_model()
    with transaction.atomic():
        team = Team.objects.select_for_update().filter(name=DEMO_TEAM).first()
        first_start = team is None and not Team.objects.exists()
        password = raw_key = None
        if first_start:
            team = Team.objects.create(name=DEMO_TEAM)
            admin = User.objects.filter(username=ADMIN_USERNAME).first()
            if admin is None:
                password = os.environ.get("TRACERELAY_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
                admin = User.objects.create_superuser(ADMIN_USERNAME, ADMIN_EMAIL, password)
            Membership.objects.get_or_create(user=admin, team=team, defaults={"role": Role.OWNER})
            Plant.objects.bulk_create([Plant(team=team, name=n, tag=t) for n, t in DEMO_PLANTS])
            _, raw_key = api_key_create(
                team=team, environment=Environment.PRODUCTION, name="demo", created_by=admin, actor="bootstrap"
            )
    admin = User.objects.filter(username=ADMIN_USERNAME).first()
    return {
        "first_start": first_start,
        "team": DEMO_TEAM,
        "username": ADMIN_USERNAME if admin else None,
        "email": admin.email if admin else None,
        "password": password,
        "key": raw_key,
        "active_keys": ApiKey.objects.filter(revoked_at__isnull=True).count(),
    }
