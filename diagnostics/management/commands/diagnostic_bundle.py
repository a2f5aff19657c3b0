"""``manage.py diagnostic_bundle [--team NAME] [--output PATH]``: the diagnostic bundle for operators."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from accounts.models import Team
from diagnostics.bundle import build_bundle


class Command(BaseCommand):
    help = "Write the diagnostic bundle (a zip with versions, settings without secrets, health, queues, errors)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--team", help="Only this team's deliveries, errors and debug records (default: all).")
        parser.add_argument(
            "--output",
            "-o",
            help="Where to write the zip (default: ./tracerelay-diagnostics-<time>.zip; '-' for stdout).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        team_id = None
        if options.get("team"):
            team = Team.objects.filter(name=options["team"]).first()
            if team is None:
                raise CommandError(f"No team named {options['team']!r}.")
            team_id = team.pk
        data = build_bundle(team_id=team_id)
        output = options.get("output") or f"tracerelay-diagnostics-{timezone.now():%Y%m%dT%H%M%SZ}.zip"
        if output == "-":
            sys.stdout.buffer.write(data)
            return
        path = Path(output)
        path.write_bytes(data)
        self.stdout.write(f"Wrote {path} ({len(data):,} bytes).")
