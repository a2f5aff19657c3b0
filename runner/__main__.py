"""`python -m runner`: what bin/run runs (see runner.main); `python -m runner psql|pg_dump|pg_restore ...`
runs the embedded Postgres's own client against it (bin/run must be running), e.g. to move the data
to a managed Postgres (docs/deployment.md)."""

from __future__ import annotations

import sys

from django.core.exceptions import ImproperlyConfigured

from .clients import run_client
from .main import main

if __name__ == "__main__":
    try:
        sys.exit(run_client(sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else main())
    except ImproperlyConfigured as exc:  # a setting it cannot use, named by the settings
        sys.exit(f"bin/run: {exc}")
