"""Settings refuse a boolean they cannot read, naming the variable, instead of reading it as False;
and a public URL that is no http(s) address people could open."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import StrictEnv, public_url_setting


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("true", True),
        ("1", True),
        ("Yes", True),
        (" on ", True),
        ("false", False),
        ("0", False),
        ("no", False),
        ("OFF", False),
        ("", False),
    ],
)
def test_it_reads_the_usual_spellings(monkeypatch, raw, expected):
    monkeypatch.setenv("TR_TEST_FLAG", raw)
    assert StrictEnv().bool("TR_TEST_FLAG", default=not expected) is expected


@pytest.mark.parametrize("raw", ["ture", "yes please", "2", "enabled"])
def test_it_refuses_a_mistyped_boolean_and_names_the_variable(monkeypatch, raw):
    monkeypatch.setenv("TR_TEST_FLAG", raw)
    with pytest.raises(ImproperlyConfigured, match=r"TR_TEST_FLAG="):
        StrictEnv().bool("TR_TEST_FLAG", default=False)


def test_an_unset_variable_takes_the_default(monkeypatch):
    monkeypatch.delenv("TR_TEST_FLAG", raising=False)
    assert StrictEnv().bool("TR_TEST_FLAG", default=True) is True


def test_the_settings_refuse_to_start_on_a_mistyped_debug(monkeypatch):
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup()",
        ],
        env={**os.environ, "DEBUG": "ture"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "DEBUG='ture' is not a boolean" in result.stderr


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("https://tracerelay.example.com", "https://tracerelay.example.com"),
        ("https://tracerelay.example.com/", "https://tracerelay.example.com"),
        (" http://10.0.0.5:8000/obs/ ", "http://10.0.0.5:8000/obs"),
    ],
)
def test_the_public_url_is_kept_without_its_trailing_slash(raw, expected):
    assert public_url_setting("TRACERELAY_PUBLIC_URL", raw) == expected


@pytest.mark.parametrize(
    "raw",
    ["tracerelay.example.com", "ftp://example.com", "https://", "https://example.com/?a=1",
     "https://example.com/#top", "https://user:pw@example.com", "https://example.com:port", ""],
)  # fmt: skip
def test_a_public_url_people_cannot_open_stops_the_start(raw):
    with pytest.raises(ImproperlyConfigured, match=r"TRACERELAY_PUBLIC_URL="):
        public_url_setting("TRACERELAY_PUBLIC_URL", raw)


def test_the_public_url_defaults_to_where_bin_run_serves(monkeypatch):
    script = "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='config.settings'; django.setup(); "
    script += "from django.conf import settings; print(settings.TRACERELAY_PUBLIC_URL)"
    env = {k: v for k, v in os.environ.items() if k not in ("TRACERELAY_PUBLIC_URL", "PORT")}
    result = subprocess.run([sys.executable, "-c", script], env={**env, "PORT": "8123"}, capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert result.stdout.strip() == "http://127.0.0.1:8123", result.stderr


def _settings_of(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = (
        "import json, os; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'\n"
        "from django.conf import settings\n"
        "db = settings.DATABASES['default']\n"
        "print(json.dumps([db['ENGINE'], db['HOST'], db['NAME'], settings.REDIS_URL, settings.CELERY_BROKER_URL,"
        " str(settings.DATA_DIR)]))"
    )
    drop = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE", "TRACERELAY_DATA_DIR")
    clean = {k: v for k, v in os.environ.items() if k not in drop}
    return subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, timeout=60
    )


def test_with_no_urls_the_settings_use_the_embedded_postgres_and_valkey_of_the_data_folder(tmp_path):
    import json

    done = _settings_of({"TRACERELAY_DATA_DIR": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    engine, host, name, redis_url, broker, data_dir = json.loads(done.stdout)
    assert (engine, host, name) == ("django.db.backends.postgresql", str(tmp_path / "run"), "tracerelay")
    assert redis_url == f"unix://{tmp_path}/run/valkey.sock?db=0"
    assert broker == f"redis+socket://{tmp_path}/run/valkey.sock"
    assert data_dir == str(tmp_path)


def test_a_relative_data_folder_is_taken_from_the_checkout_wherever_the_command_runs():
    import json
    import shutil
    import uuid

    name = f".test-data-{uuid.uuid4().hex[:8]}"
    root = Path(__file__).resolve().parents[1]
    try:
        done = _settings_of({"TRACERELAY_DATA_DIR": name})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)[5] == str(root / name)
    finally:
        shutil.rmtree(root / name, ignore_errors=True)


def test_the_settings_refuse_a_database_url_that_is_not_postgres(tmp_path):
    done = _settings_of({"TRACERELAY_DATA_DIR": str(tmp_path), "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"})
    assert done.returncode != 0
    assert "DATABASE_URL must be a Postgres URL (postgres://…), not sqlite:" in done.stderr
