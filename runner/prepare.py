"""`python -m runner.prepare --url URL --result FILE`: bin/run's one-shot step before the web and the
workers start, in one Django process (a second one would cost its start-up again): apply the
migrations, then `manage.py bootstrap` (the demo team, admin login and key on the first start),
whose result (JSON) goes to FILE for the first screen."""

from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.prepare")
    parser.add_argument("--url", required=True)
    parser.add_argument("--result", required=True, type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        print(f"applying {len(plan)} migrations", flush=True)
    call_command("migrate", interactive=False, verbosity=0)
    out = io.StringIO()
    call_command("bootstrap", url=args.url, json=True, stdout=out)
    args.result.write_text(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
