"""A bench script's own Postgres database: pointing Django at it, making it afresh, and the bulk
load around COPY (drop a table's secondary indexes, load, build them again, VACUUM ANALYZE).

    from _benchdb import use_database              # first, before anything imports Django
    use_database("tracerelay_bench_<what>")
    ...
    recreate_database()                             # DROP, CREATE, migrate (not with --reuse)
    django.setup()
    indexes = drop_indexes("traces_trace")
    copy_rows("traces_trace", COLUMNS, rows)        # as many times as it takes
    rebuild_indexes(indexes)                        # and VACUUM ANALYZE

The database sits on DATABASE_URL's server (default postgres@127.0.0.1:5432); Redis is
BENCH_REDIS_URL (default db 9); files go to /tmp/tracerelay-bench-data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SERVER_URL = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/tracerelay").rsplit("/", 1)[0]


def use_database(name: str) -> None:
    """Point Django's settings at the database ``name`` (and the project on sys.path). Call it
    before anything imports Django."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_URL": f"{SERVER_URL}/{name}",
            "REDIS_URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/9"),
            "TRACERELAY_DATA_DIR": "/tmp/tracerelay-bench-data",
            "LOG_LEVEL": "WARNING",
        }
    )


def database_name() -> str:
    return os.environ["DATABASE_URL"].rsplit("/", 1)[1]


def recreate_database() -> None:
    """Drop the database `use_database` named (if there), create it and migrate it."""
    import psycopg

    name = database_name()
    with psycopg.connect(f"{SERVER_URL}/postgres".replace("postgres://", "postgresql://"), autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {name}")
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)


def drop_indexes(table: str) -> list[str]:
    """Drop ``table``'s secondary indexes (the primary key and unique ones stay); their definitions,
    for `rebuild_indexes`."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s "
            "AND indexname NOT LIKE '%%pkey' AND indexdef NOT LIKE 'CREATE UNIQUE%%'",
            [table],
        )
        found = cursor.fetchall()
        for name, _ in found:
            cursor.execute(f"DROP INDEX {name}")
    return [definition for _, definition in found]


def copy_rows(table: str, columns: str | Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """COPY ``rows`` (tuples in ``columns`` order; JSON values wrapped in psycopg's Jsonb) into ``table``."""
    from django.db import connection

    names = columns if isinstance(columns, str) else ", ".join(columns)
    with connection.cursor() as cursor, cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)


def rebuild_indexes(definitions: Iterable[str], *, analyze: bool = True) -> float:
    """Create the indexes `drop_indexes` returned, then VACUUM ANALYZE the database (the statistics,
    and the visibility map autovacuum keeps in a running system, without which no index-only scan
    skips the table); the seconds it took."""
    from django.db import connection

    t0 = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("SET maintenance_work_mem = '512MB'")
        for sql in definitions:
            cursor.execute(sql)
        if analyze:
            cursor.execute("VACUUM ANALYZE")
    return time.perf_counter() - t0
