"""What bin/run runs: a supervisor (`supervisor`) for the web, the Celery workers and beat, and, with
no DATABASE_URL / REDIS_URL, the embedded Postgres and Valkey (`postgres`, `valkey`). `main` is the
start-up; `python -m runner` runs it (docs/architecture.md, "bin/run")."""
