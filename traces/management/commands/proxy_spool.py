"""``manage.py proxy_spool list|replay``: the proxy traces the store refused, set aside in the spool.

    manage.py proxy_spool list                    # when, team, model and why, one per line
    manage.py proxy_spool replay --id trc_… [--id …]
    manage.py proxy_spool replay --all

Run it on each host whose proxy spools (the spool directory is per host:
``TRACERELAY_PROXY_SPOOL_DIR``, or ``--spool-dir``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from traces.proxy.rejected import rejected_dir, rejected_traces, replay_rejected

REASON_WIDTH = 100


class Command(BaseCommand):
    help = "List or replay the proxy traces the store refused (set aside in the proxy spool's rejected/ folder)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=("list", "replay"))
        parser.add_argument("--id", action="append", dest="ids", default=[], help="a trace id to replay (repeatable)")
        parser.add_argument("--all", action="store_true", help="replay every trace set aside")
        parser.add_argument("--spool-dir", type=Path, help="default: TRACERELAY_PROXY_SPOOL_DIR")

    def handle(self, *args: Any, **options: Any) -> None:
        spool_dir = options["spool_dir"] or Path(settings.TRACERELAY_PROXY_SPOOL_DIR)
        if options["action"] == "list":
            if options["ids"] or options["all"]:
                raise CommandError("--id and --all go with replay, not list")
            self._list(spool_dir)
        else:
            self._replay(spool_dir, options["ids"], options["all"])

    def _list(self, spool_dir: Path) -> None:
        entries = rejected_traces(spool_dir)
        if not entries:
            self.stdout.write(f"No refused proxy traces in {rejected_dir(spool_dir)}.")
            return
        self.stdout.write(f"{'WHEN (UTC)':<20} {'TEAM':>6}  {'TRACE ID':<32} {'MODEL':<24} WHY")
        for entry in entries:
            when = entry.rejected_at.strftime("%Y-%m-%d %H:%M:%S") if entry.rejected_at else "?"
            reason = entry.reason if len(entry.reason) <= REASON_WIDTH else entry.reason[: REASON_WIDTH - 1] + "…"
            self.stdout.write(f"{when:<20} {entry.team_id:>6}  {entry.trace_id:<32} {entry.model[:24]:<24} {reason}")
        self.stdout.write(f"{len(entries)} refused trace(s) in {rejected_dir(spool_dir)}.")

    def _replay(self, spool_dir: Path, ids: list[str], everything: bool) -> None:
        if everything == bool(ids):
            raise CommandError("replay needs --id <trace id> (repeatable) or --all, not both")
        if ids:
            known = {e.trace_id for e in rejected_traces(spool_dir)}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise CommandError(f"not among the refused traces in {rejected_dir(spool_dir)}: {', '.join(unknown)}")
        report = replay_rejected(spool_dir, None if everything else set(ids))
        self.stdout.write(
            f"Replayed: {len(report.stored)} stored, {len(report.already_stored)} already stored,"
            f" {len(report.refused)} still refused."
        )
        for trace_id, reason in report.refused.items():
            self.stderr.write(f"{trace_id}: {reason}")
        if report.refused:
            raise CommandError(f"{len(report.refused)} trace(s) still refused; they stay in {rejected_dir(spool_dir)}")
