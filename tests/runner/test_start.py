"""What bin/run says before it starts anything, the data folder's lock and socket paths, manage.py
without a running server, and the first screen's box. (test_embedded.py starts the real thing.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from config import embedded
from runner import banner

ROOT = Path(__file__).resolve().parents[2]
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE")


def plain_env(data_dir: Path, **extra: str) -> dict[str, str]:
    """The environment of a newcomer's shell: no service URLs, this data folder."""
    env = {k: v for k, v in os.environ.items() if k not in SERVICE_VARIABLES}
    return {**env, "TRACERELAY_DATA_DIR": str(data_dir), **extra}


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_second_run_on_the_same_data_folder_says_one_is_running(tmp_path):
    lock = embedded.DataFolderLock(tmp_path)
    assert lock.acquire({"pid": 4242, "url": "http://127.0.0.1:8123"})
    try:
        done = run([sys.executable, "-m", "runner"], plain_env(tmp_path, PORT=str(free_port())))
    finally:
        lock.release()
    assert done.returncode == 1
    assert f"tracerelay is already running on the data folder {tmp_path}" in done.stderr
    assert "bin/run pid 4242, http://127.0.0.1:8123" in done.stderr
    assert not (tmp_path / "postgres").exists()  # nothing was touched


def test_a_taken_port_is_named_before_anything_starts(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run([sys.executable, "-m", "runner"], plain_env(tmp_path, PORT=str(port)))
    assert done.returncode == 1
    assert f"Port {port} on 127.0.0.1 is taken by another program" in done.stderr
    assert not (tmp_path / "postgres").exists()


@pytest.mark.parametrize("value", ["abc", "0", "-1"])
def test_a_bad_number_in_the_environment_is_refused(tmp_path, value):
    done = run([sys.executable, "-m", "runner"], plain_env(tmp_path, WEB_WORKERS=value))
    assert done.returncode == 1 and f"WEB_WORKERS={value!r}: a whole number of at least 1" in done.stderr


def test_a_database_url_that_is_not_postgres_is_named(tmp_path):
    done = run([sys.executable, "-m", "runner"], plain_env(tmp_path, DATABASE_URL="sqlite:///db.sqlite3"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "bin/run: DATABASE_URL must be a Postgres URL (postgres://…), not sqlite:" in done.stderr


def test_manage_py_says_to_start_bin_run_when_the_embedded_database_is_not_running(tmp_path):
    done = run([sys.executable, "manage.py", "apikey", "list"], plain_env(tmp_path))
    assert done.returncode == 1
    assert f"The embedded Postgres of {tmp_path} is not running: start ./bin/run first" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_clients_need_the_server_running(tmp_path):
    done = run([sys.executable, "-m", "runner", "pg_dump"], plain_env(tmp_path))
    assert done.returncode == 1 and "is not running: start ./bin/run first" in done.stderr
    done = run([sys.executable, "-m", "runner", "rm"], plain_env(tmp_path))
    assert done.returncode == 2 and "usage: python -m runner [psql|pg_dump|pg_dumpall|pg_restore" in done.stderr


def test_the_lock_names_its_holder_and_is_free_once_released(tmp_path):
    first, second = embedded.DataFolderLock(tmp_path), embedded.DataFolderLock(tmp_path)
    assert first.holder() is None
    assert first.acquire({"pid": 1, "url": "u"})
    assert not second.acquire({"pid": 2, "url": "v"})
    assert second.holder() == {"pid": 1, "url": "u"}
    first.release()
    assert second.holder() is None and second.acquire({"pid": 2, "url": "v"})
    second.release()


def test_the_lock_is_dropped_when_its_process_dies(tmp_path):
    code = (
        "import sys, time; from pathlib import Path; from config.embedded import DataFolderLock\n"
        f"DataFolderLock(Path({str(tmp_path)!r})).acquire({{'pid': 7}}); print('held', flush=True); time.sleep(600)"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert embedded.DataFolderLock(tmp_path).holder() == {"pid": 7}
        holder.kill()
        holder.wait(10)
        assert embedded.DataFolderLock(tmp_path).holder() is None  # no stale lock after a crash
    finally:
        holder.kill()


def test_sockets_live_in_the_data_folder_or_a_short_folder_named_after_it(tmp_path):
    short = tmp_path / "data"
    assert embedded.socket_dir(short) == short / "run"
    assert embedded.database_settings(short)["HOST"] == str(short / "run")
    assert embedded.redis_url(short) == f"unix://{short / 'run' / 'valkey.sock'}?db=0"
    assert embedded.broker_url(short) == f"redis+socket://{short / 'run' / 'valkey.sock'}"
    deep = tmp_path / ("x" * 120) / "data"
    moved = embedded.socket_dir(deep)
    assert moved.parent == Path(os.environ.get("TMPDIR", "/tmp")) and moved.name.startswith("tracerelay-")
    assert moved == embedded.socket_dir(deep) and moved != embedded.socket_dir(tmp_path / ("y" * 120))
    assert len(os.fsencode(moved / ".s.PGSQL.5432.lock")) < 104


def test_a_socket_folder_of_another_user_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "run"
    folder.mkdir()
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(folder).st_uid + 12345)
    with pytest.raises(PermissionError, match="belongs to another user"):
        embedded.make_socket_dir(folder)


def test_the_first_screen_shows_url_login_and_key_in_a_box():
    made = {
        "url": "http://127.0.0.1:8000",
        "first_start": True,
        "team": "demo",
        "username": "admin",
        "email": "admin@localhost",
        "password": "pw-123",
        "key": "tr_prod_abc",
        "active_keys": 1,
    }
    text = banner.render(banner.lines_of(made, data_dir="/d", still_starting=[]), unicode=True, color=False)
    rows = text.strip("\n").splitlines()
    assert rows[0].startswith("╔") and rows[-1].startswith("╚") and len({len(r) for r in rows}) == 1
    body = "\n".join(rows)
    assert "URL        http://127.0.0.1:8000/" in body
    assert "║ Log in     http://127.0.0.1:8000/login " in body
    assert "Username or e-mail   admin   (or admin@localhost)" in body
    assert "Password             pw-123 " in body
    assert "API key    tr_prod_abc " in body and "shown this once" in body
    plain = banner.render(banner.lines_of(made, data_dir="/d", still_starting=[]), unicode=False, color=False)
    assert plain.strip().startswith("+====")


def test_a_restart_screen_says_how_to_get_a_password_and_a_key():
    made = {"url": "http://h:1", "team": "demo", "username": "admin", "email": "admin@localhost", "active_keys": 2}
    body = "\n".join(banner.lines_of(made, data_dir="/d", still_starting=["beat"]))
    assert "           Username or e-mail   admin   (or admin@localhost)" in body
    assert "           Password             the one shown on the first start; to set another:" in body
    assert "manage.py changepassword admin" in body
    assert "API keys   2 active" in body and "manage.py apikey create --team demo --environment production" in body
    assert "Starting   beat" in body


def test_the_first_screen_names_the_log_in_forms_fields_word_for_word():
    from accounts.forms import LoginForm

    form = LoginForm()
    assert banner.LOGIN_FIELD == form.fields["username"].label
    assert banner.PASSWORD_FIELD == form.fields["password"].label
    made = {"url": "http://h:1", "team": "demo", "username": "admin", "password": "pw", "active_keys": 1}
    body = "\n".join(banner.lines_of(made, data_dir="/d", still_starting=[]))
    assert f"{form.fields['username'].label}   admin\n" in body and f"{form.fields['password'].label}" in body
