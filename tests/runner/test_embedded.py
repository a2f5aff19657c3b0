"""The embedded default for real: `python -m runner` (what bin/run execs) with no DATABASE_URL or
REDIS_URL, in a data folder of its own, as the user running the tests (root on these machines, so
Postgres runs as the embedded_postgres user). First start, manage.py beside it, a worker killed and
restarted, Ctrl-C, a restart that finds the data. Every process of the run is gone at the end."""

from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config import embedded

from .test_start import ROOT, free_port, plain_env

pytestmark = pytest.mark.e2e
START_TIMEOUT_S = 300  # a first start: initdb and every migration, on a shared 2-core machine


def processes_of(data_dir: Path) -> list[int]:
    """Processes that belong to a run on ``data_dir``: its path in their command line (Postgres,
    Valkey) or their environment (everything else)."""
    needle = os.fsencode(str(data_dir))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "cmdline").read_bytes() or needle in (entry / "environ").read_bytes():
                if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.fixture
def data_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="tr-embedded-"))
    yield path
    for pid in processes_of(path):  # the net under a failed test: nothing may outlive it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    shutil.rmtree(path, ignore_errors=True)


class Run:
    """One `python -m runner` in its own process group, its output in a file."""

    def __init__(self, data_dir: Path, port: int, logs: Path) -> None:
        self.env = plain_env(data_dir, PORT=str(port), WEB_WORKERS="1", WORKER_CONCURRENCY="1", DELIVERY_THREADS="2")
        self.base = f"http://127.0.0.1:{port}"
        self.log_path = logs / f"run-{time.monotonic_ns()}.log"
        self.log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "runner"], cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip

    def text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, pattern: str, timeout: float = 120, count: int = 1) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            matches = list(re.finditer(pattern, self.text()))
            if len(matches) >= count:
                return matches[count - 1]
            assert self.proc.poll() is None, f"bin/run exited ({self.proc.returncode}):\n{self.text()[-3000:]}"
            time.sleep(0.1)
        raise AssertionError(f"no {pattern!r} within {timeout}s:\n{self.text()[-3000:]}")

    def call(self, method: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("Authorization", f"Bearer {key}")
        request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def ctrl_c(self) -> float:
        """SIGINT to the process group, as a terminal's Ctrl-C; how long the stop took."""
        started = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGINT)
        code = self.proc.wait(60)
        took = time.monotonic() - started
        self.log.close()
        assert code == 0, self.text()[-3000:]
        return took


class Receiver:
    """A webhook destination on loopback that keeps every body it gets."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.arrived = threading.Condition()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with receiver.arrived:
                    receiver.bodies.append(body)
                    receiver.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, needle: bytes, timeout: float = 90) -> bool:
        with self.arrived:
            return self.arrived.wait_for(lambda: any(needle in b for b in self.bodies), timeout)


def test_the_embedded_default_starts_survives_a_killed_worker_stops_and_keeps_its_data(data_dir, tmp_path):
    port = free_port()
    run = Run(data_dir, port, tmp_path)
    run.wait_for(r"tracerelay is running", START_TIMEOUT_S)
    key = run.wait_for(r"API key\s+(tr_prod_\S+)").group(1)
    password = run.wait_for(r"Username or e-mail\s+admin\b[^\n]*\n[^\n]*Password\s+(\S+)").group(1)
    assert run.text().rindex("tracerelay is running") > run.text().rindex("ready.")  # after the banners

    # Real servers, on sockets in the data folder, Postgres as an unprivileged user when we are root.
    postgres = [p for p in processes_of(data_dir) if b"postgres\0-D" in Path(f"/proc/{p}/cmdline").read_bytes()]
    assert len(postgres) == 1
    if os.geteuid() == 0:
        import pwd

        assert Path(f"/proc/{postgres[0]}").stat().st_uid == pwd.getpwnam("embedded_postgres").pw_uid
    assert (data_dir / "run" / ".s.PGSQL.5432").is_socket() and (data_dir / "run" / "valkey.sock").is_socket()

    # manage.py beside it, with nothing set, reaches the same database; a second run is refused.
    env = {k: v for k, v in run.env.items() if k != "PORT"}
    listed = subprocess.run([sys.executable, "manage.py", "apikey", "list"], cwd=ROOT, env=env, capture_output=True)
    assert listed.returncode == 0 and key[:14].encode() in listed.stdout, listed.stderr
    second = subprocess.run([sys.executable, "-m", "runner"], cwd=ROOT, env=run.env, capture_output=True, text=True)
    assert second.returncode == 1 and "tracerelay is already running on the data folder" in second.stderr

    # The admin signs in with the username or the e-mail.
    for name in ("admin", "admin@localhost"):
        assert sign_in(run.base, name, password), name

    # A trace routed to a webhook on loopback arrives; the delivery worker is killed; the next arrives.
    hook = Receiver()
    integration = {"name": "hook", "platform": "webhook", "config": {"url": hook.url}}
    assert run.call("POST", "/api/v1/integrations", key, integration)[0] == 201
    assert (
        run.call("PUT", "/api/v1/routing/rules", key, {"rules": [{"name": "all", "destinations": ["hook"]}]})[0] == 200
    )
    assert run.call("POST", "/api/v1/traces", key, {"model": "gpt-4o", "id": "before-kill"})[0] == 201
    assert hook.wait_for(b"before-kill")
    delivery = run_pid(data_dir, b"delivery@%h")
    os.kill(delivery, signal.SIGKILL)
    run.wait_for(r"delivery exited unexpectedly \(killed by SIGKILL\)")
    run.wait_for(r"delivery@\S+ ready\.", count=2)
    assert run.call("POST", "/api/v1/traces", key, {"model": "gpt-4o", "id": "after-kill"})[0] == 201
    assert hook.wait_for(b"after-kill")
    assert run.proc.poll() is None

    # Ctrl-C stops everything, the database included, in well under 30 s; no process is left, and
    # no scratch folder.
    assert run.ctrl_c() < 30
    assert processes_of(data_dir) == []
    assert not embedded.runtime_dir(data_dir).exists()
    for path in data_dir.rglob("*"):
        if path.is_file():
            with open(path, "rb") as handle:
                assert handle.read(16) != b"SQLite format 3\0", path

    # A restart finds the traces, the key and the rule.
    again = Run(data_dir, port, tmp_path)
    again.wait_for(r"tracerelay is running", START_TIMEOUT_S)
    assert "API keys   1 active" in again.text() and "making the embedded Postgres cluster" not in again.text()
    status, page = again.call("GET", "/api/v1/traces?limit=10", key)
    assert status == 200 and {"before-kill", "after-kill"} <= {t["id"] for t in page["data"]}
    assert again.ctrl_c() < 30
    assert processes_of(data_dir) == []


def run_pid(data_dir: Path, marker: bytes) -> int:
    for pid in processes_of(data_dir):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        if marker in cmdline and os.getpgid(pid) == pid:  # the worker itself, not one of its pool's processes
            return pid
    raise AssertionError(f"no process with {marker!r}")


def sign_in(base: str, username: str, password: str) -> bool:
    """The dashboard's log-in form, as a browser posts it: True when it lands on the dashboard."""
    import http.cookiejar

    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base + "/login", timeout=30).read().decode()
    assert ">Username or e-mail</label>" in page
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    form = urllib.parse.urlencode({"username": username, "password": password, "csrfmiddlewaretoken": token})
    request = urllib.request.Request(base + "/login", data=form.encode(), headers={"Referer": base + "/login"})
    try:
        with opener.open(request, timeout=30) as response:
            return response.url.rstrip("/") == base and "sessionid" in {c.name for c in jar}
    except urllib.error.HTTPError:
        return False
