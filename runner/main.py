"""What `bin/run` does once the virtualenv is there: hold the data folder, start the embedded Postgres
and Valkey when DATABASE_URL / REDIS_URL are unset, migrate and bootstrap, start the web, the two
Celery workers and beat under the supervisor, print the first screen, and keep them running until
Ctrl-C or SIGTERM, which stop everything, the database last.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from config import embedded

from . import banner
from .children import describe_exit
from .supervisor import Program, StartupFailed, Supervisor

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 120.0  # the servers, the migrations of a first start, then the web and workers
APP_STOP_GRACE_S = 15.0  # web and workers finish what they are doing (the web: 10 s at most)
SERVER_STOP_GRACE_S = 10.0  # then Valkey and Postgres; all under 30 s
# No start-up sync with the other workers (a second's wait) and no gossip: nothing here uses what
# they share (revocations go through the broker's remote control).
QUIET_WORKER = ("--without-mingle", "--without-gossip")
MIGRATED_MARKER = "migrated.sha256"  # in the data folder: the migrations the database was last migrated with


@dataclass(frozen=True)
class Options:
    port: int
    host: str
    web_workers: int
    worker_concurrency: int
    delivery_threads: int

    @classmethod
    def from_env(cls, env: dict[str, str]) -> Options:
        cores = os.cpu_count() or 2

        def number(name: str, default: int) -> int:
            raw = env.get(name) or str(default)
            if not raw.isdigit() or int(raw) < 1:
                raise SystemExit(f"{name}={raw!r}: a whole number of at least 1, please")
            return int(raw)

        return cls(
            port=number("PORT", 8000),
            host=env.get("HOST") or "127.0.0.1",
            web_workers=number("WEB_WORKERS", cores),
            worker_concurrency=number("WORKER_CONCURRENCY", cores),
            delivery_threads=number("DELIVERY_THREADS", 8),
        )

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}"


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ["PYTHONUNBUFFERED"] = "1"
    from django.conf import settings  # the settings alone (no django.setup): the data folder, the URLs

    data_dir = Path(settings.DATA_DIR)
    options = Options.from_env(dict(os.environ))
    lock = embedded.DataFolderLock(data_dir)
    if not lock.acquire({"pid": os.getpid(), "url": options.url}):
        holder = lock.holder() or {}
        pid, url = holder.get("pid", "?"), holder.get("url", "?")
        print(
            f"tracerelay is already running on the data folder {data_dir} (bin/run pid {pid}, {url}).\n"
            "Stop it first (Ctrl-C in its terminal, or kill -TERM that pid), or give this one a data folder\n"
            "of its own: TRACERELAY_DATA_DIR=/path/to/another ./bin/run",
            file=sys.stderr,
        )
        return 1
    if not _port_free(options.host, options.port):
        print(
            f"Port {options.port} on {options.host} is taken by another program: stop it, or choose a port"
            f" with PORT=8001 ./bin/run",
            file=sys.stderr,
        )
        return 1
    sup = Supervisor()
    sup.install_signal_handlers()
    try:
        return _run(sup, settings, data_dir, options)
    except StartupFailed as exc:
        sup.say(f"could not start: {exc}. Stopping.")
        _stop_all(sup)
        return 1
    except subprocess.CalledProcessError as exc:  # initdb (its output is above)
        if sup.stop_requested is None:
            sup.say(f"{Path(exc.cmd[0]).name} failed ({describe_exit(exc.returncode)}): see above. Stopping.")
        _stop_all(sup)
        return 1
    finally:
        sup.close()
        sup.restore_signal_handlers()
        if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):  # our scratch folder (the metrics files)
            shutil.rmtree(embedded.runtime_dir(data_dir), ignore_errors=True)
        lock.release()


def _run(sup: Supervisor, settings: Any, data_dir: Path, options: Options) -> int:
    started = time.monotonic()
    phases: list[tuple[str, float]] = [("", started)]
    env = _environment(data_dir)
    if not _start_servers(sup, settings, data_dir, options):
        return _gave_up(sup, " and ".join(n for n in ("postgres", "valkey") if n in sup.states and not sup.is_ready(n)))
    phases.append(("servers", time.monotonic()))

    # Nothing new to migrate since the last start (the migrations and requirements are those it
    # migrated with): everything starts at once beside the migration check and bootstrap, which
    # change nothing then. Otherwise the web waits for them, and the workers for the web.
    marker, fingerprint = data_dir / MIGRATED_MARKER, _migrations_fingerprint()
    at_once = marker.is_file() and marker.read_text() == fingerprint
    programs = _service_programs(options, env)
    names = [p.name for p in programs]
    # (In the data folder, mode 600, gone once read: it holds the first start's password and key.)
    result = Path(tempfile.mkstemp(prefix=".bootstrap-", suffix=".json", dir=data_dir)[1])
    try:
        argv = [sys.executable, "-m", "runner.prepare", "--url", options.url, "--result", str(result)]
        sup.start(Program("setup", argv, env=env, cwd=ROOT, restart=False))
        if at_once:
            sup.say(f"no new migrations: starting the web on {options.url}, the workers and beat")
            for program in programs:
                sup.start(program)
        if not sup.run_until(lambda: sup.exited("setup") is not None, None):
            return _gave_up(sup, "setup")
        if sup.exited("setup") != 0:
            sup.say("migrating or bootstrapping failed (its lines are above). Stopping.")
            _stop_all(sup)
            return 1
        made = json.loads(result.read_text())
    finally:
        result.unlink(missing_ok=True)
    marker.write_text(fingerprint)
    phases.append(("migrate", time.monotonic()))

    if not at_once:
        web, rest = programs[0], programs[1:]
        sup.say(f"starting the web on {options.url} ({options.web_workers} processes)")
        sup.start(web)
        sup.run_until(lambda: sup.is_ready("web"), READY_TIMEOUT_S)
        phases.append(("web", time.monotonic()))
        if sup.stop_requested is None:
            sup.say(f"web ready in {time.monotonic() - started:.1f}s; starting the Celery workers and beat")
            for program in rest:
                sup.start(program)
    sup.run_until(lambda: all(sup.is_ready(n) for n in names), READY_TIMEOUT_S)
    if sup.stop_requested is None:
        phases.append(("web and workers" if at_once else "workers", time.monotonic()))
        steps = ", ".join(f"{name} {end - start:.1f}s" for (_, start), (name, end) in pairwise(phases))
        sup.say(f"up in {time.monotonic() - started:.1f}s ({steps})")
        waiting = [n for n in names if not sup.is_ready(n)]
        lines = banner.lines_of(made, data_dir=str(data_dir), still_starting=waiting)
        unicode = (getattr(sys.stdout, "encoding", "") or "").lower().replace("-", "").startswith("utf")
        sup.write(banner.render(lines, unicode=unicode, color=sup.color))
        sup.serve()
    _stop_all(sup)
    return 0


def _environment(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    metrics = Path(env.get("PROMETHEUS_MULTIPROC_DIR") or embedded.runtime_dir(data_dir) / "prometheus")
    # Every process writes its metrics into this folder, which /metrics adds up: emptied at each start,
    # or the files of processes gone would count twice (docs/deployment.md).
    shutil.rmtree(metrics, ignore_errors=True)
    metrics.mkdir(parents=True, exist_ok=True)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(metrics)
    return env


def _start_servers(sup: Supervisor, settings: Any, data_dir: Path, options: Options) -> bool:
    """The embedded Postgres and Valkey whose URLs are unset, side by side (Valkey needs no Postgres);
    the database made once Postgres takes connections. False when they did not get ready."""
    servers = []
    postgres = None
    if not settings.DATABASE_URL:
        from .postgres import EmbeddedPostgres

        postgres = EmbeddedPostgres(data_dir, max_connections=max(100, 20 * options.web_workers + 60))
        postgres.prepare(sup.say)
        sup.start(postgres.program())
        servers.append("postgres")
    if settings.REDIS_URL == embedded.redis_url(data_dir):
        from .valkey import EmbeddedValkey

        valkey = EmbeddedValkey(data_dir)
        valkey.prepare()
        sup.start(valkey.program())
        servers.append("valkey")
    if not sup.run_until(lambda: all(sup.is_ready(name) for name in servers), READY_TIMEOUT_S):
        return False
    if postgres is not None and postgres.ensure_database():
        sup.say(f"made the database {embedded.DATABASE!r} in the embedded Postgres")
    return True


def _service_programs(options: Options, env: dict[str, str]) -> list[Program]:
    """The web, then the delivery worker, the backfill worker, the ingest/reports worker and beat."""
    python = sys.executable
    celery = [python, "-m", "celery", "-A", "config"]
    return [
        Program(
            "web",
            [python, "-m", "uvicorn", "config.asgi:application", "--loop", "uvloop", "--http", "httptools"]
            + ["--workers", str(options.web_workers), "--host", options.host, "--port", str(options.port)]
            + ["--no-access-log", "--timeout-graceful-shutdown", "10"],
            env=env,
            cwd=ROOT,
            ready_check=lambda: _answers(f"http://127.0.0.1:{options.port}/readyz"),
        ),
        # Delivery is network-bound: one process with a thread pool sends ~5x what a prefork process does.
        Program(
            "delivery",
            [*celery, "worker", "-Q", "delivery", "-P", "threads", "-c", str(options.delivery_threads)]
            + ["-l", "info", "-n", "delivery@%h", *QUIET_WORKER],
            env=env,
            cwd=ROOT,
            ready_line=r"@\S+ ready\.",
        ),
        # Backfill (docs/delivery.md): its own small worker, so live delivery never waits behind it,
        # at a lower CPU priority (nice 10), so that the live workers and the web go first on a busy box.
        Program(
            "backfill",
            ["nice", "-n", "10", *celery, "worker", "-Q", "backfill", "-P", "threads", "-c", "3"]
            + ["-l", "info", "-n", "backfill@%h", *QUIET_WORKER],
            env=env,
            cwd=ROOT,
            ready_line=r"@\S+ ready\.",
        ),
        Program(
            "worker",
            [*celery, "worker", "-Q", "ingest,reports", "-c", str(options.worker_concurrency)]
            + ["-l", "info", "-n", "worker@%h", *QUIET_WORKER],
            env=env,
            cwd=ROOT,
            ready_line=r"@\S+ ready\.",
        ),
        Program(
            "beat",
            [*celery, "beat", "-l", "info", "-S", "django_celery_beat.schedulers:DatabaseScheduler", "--pidfile="],
            env=env,
            cwd=ROOT,
            # A SIGTERM that lands while beat publishes a task is swallowed (the publish fails and
            # beat carries on): ask again until it goes.
            resend_stop_every=2.0,
        ),
    ]


def _migrations_fingerprint() -> str:
    """What the schema depends on: every migration file of the project, and the pinned requirements
    (Django's and django-celery-beat's own migrations come with them)."""
    digest = hashlib.sha256((ROOT / "requirements.txt").read_bytes())
    for path in sorted(ROOT.glob("*/migrations/*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def _stop_all(sup: Supervisor) -> None:
    """The web and workers first (they finish their requests and tasks), then the servers."""
    reason = {int(signal.SIGINT): "Ctrl-C", int(signal.SIGTERM): "SIGTERM"}.get(sup.stop_requested or 0, "")
    sup.say(f"stopping{f' ({reason})' if reason else ''}: web and workers, then the database")
    sup.stop(["web", "delivery", "backfill", "worker", "beat", "setup"], APP_STOP_GRACE_S)
    sup.stop(["valkey", "postgres"], SERVER_STOP_GRACE_S)
    sup.say("stopped")


def _gave_up(sup: Supervisor, name: str) -> int:
    if sup.stop_requested is None:
        sup.say(f"{name} did not become ready in {READY_TIMEOUT_S:g}s (its lines are above). Stopping.")
    _stop_all(sup)
    return 1 if sup.stop_requested is None else 0


def _answers(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=1) as response:
        return bool(response.status == 200)


def _port_free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
