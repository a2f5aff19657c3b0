"""`manage.py apikey create|list|revoke`: API keys from the command line.

`create` prints the new key alone on its last line, so scripts can take it with `tail -n 1`.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from accounts import keys
from accounts.models import ApiKey, Environment, Team
from accounts.services import api_key_create, api_key_revoke, team_create


class Command(BaseCommand):
    help = "Create, list and revoke API keys."

    def add_arguments(self, parser: ArgumentParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True, metavar="{create,list,revoke}")
        create = sub.add_parser("create", help="Make a key; it is shown once, on the last line.")
        create.add_argument("--team", required=True, help="Team name.")
        create.add_argument("--environment", required=True, choices=Environment.values)
        create.add_argument("--name", default="", help="A label to tell keys apart.")
        create.add_argument(
            "--create-team", action="store_true", help="Create the team when there is none of that name."
        )
        listing = sub.add_parser("list", help="Keys (never their secret), newest first.")
        listing.add_argument("--team", help="Only this team's keys.")
        listing.add_argument("--all", action="store_true", help="Include revoked keys.")
        revoke = sub.add_parser("revoke", help="Revoke a key by its id or its prefix (as `list` shows it).")
        revoke.add_argument("key", help="Key id, or prefix like tr_prod_AbC123.")

    def handle(self, *args: Any, **options: Any) -> None:
        getattr(self, f"_{options['action']}")(options)

    def _create(self, options: dict[str, Any]) -> None:
        name = options["team"].strip()
        team = Team.objects.filter(name=name).first()
        if team is None:
            if not options["create_team"]:
                known = ", ".join(Team.objects.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
                raise CommandError(f"No team named '{name}' (teams: {known}). Add --create-team to create it.")
            team = team_create(name=name)
            self.stdout.write(f"Created team '{team.name}'.")
        key, raw = api_key_create(team=team, environment=options["environment"], name=options["name"], actor="cli")
        self.stdout.write(f"Created {key.environment} key {key.prefix}… (id {key.pk}) for team '{team.name}'.")
        self.stdout.write("Copy it now: it is stored hashed and will not be shown again.")
        self.stdout.write(raw)

    def _list(self, options: dict[str, Any]) -> None:
        qs = ApiKey.objects.select_related("team").order_by("-created_at")
        if options.get("team"):
            if not Team.objects.filter(name=options["team"]).exists():
                raise CommandError(f"No team named '{options['team']}'.")
            qs = qs.filter(team__name=options["team"])
        if not options.get("all"):
            qs = qs.filter(revoked_at__isnull=True)
        rows = [("ID", "PREFIX", "TEAM", "ENVIRONMENT", "NAME", "CREATED", "LAST USED", "STATUS")]
        for k in qs:
            rows.append(
                (
                    str(k.pk),
                    k.prefix,
                    k.team.name,
                    k.environment,
                    k.name or "-",
                    f"{k.created_at:%Y-%m-%d %H:%M}",
                    f"{k.last_used_at:%Y-%m-%d %H:%M}" if k.last_used_at else "never",
                    "revoked" if k.revoked_at else "active",
                )
            )
        if len(rows) == 1:
            self.stdout.write("No keys.")
            return
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            self.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip())

    def _revoke(self, options: dict[str, Any]) -> None:
        ref = options["key"].strip().rstrip("…")
        qs = ApiKey.objects.select_related("team")
        if keys.parse(ref):  # the whole key
            matches = list(qs.filter(key_hash=keys.digest(ref)))
        elif ref.isdigit():
            matches = list(qs.filter(pk=int(ref)))
        elif ref.startswith("tr_") and len(ref) >= len("tr_ci_") + 2:
            matches = list(qs.filter(prefix=ref)) or list(qs.filter(prefix__startswith=ref)[:5])
        else:
            raise CommandError(f"'{ref}' is neither a key id nor a key prefix (tr_prod_…, tr_dev_…, tr_ci_…).")
        if not matches:
            raise CommandError(f"No key with id or prefix '{ref}'. See `manage.py apikey list --all`.")
        if len(matches) > 1:
            listed = ", ".join(f"{k.pk} ({k.prefix}, {k.team.name})" for k in matches)
            raise CommandError(f"'{ref}' matches several keys: {listed}. Revoke by id.")
        key = matches[0]
        if key.revoked_at is not None:
            self.stdout.write(
                f"Key {key.prefix}… (id {key.pk}) was already revoked at {key.revoked_at:%Y-%m-%d %H:%M}."
            )
            return
        api_key_revoke(key=key, actor="cli")
        self.stdout.write(f"Revoked key {key.prefix}… (id {key.pk}) of team '{key.team.name}'.")
