"""Settings refuse a boolean they cannot read, naming the variable, instead of reading it as False;
and a public URL that is no http(s) address people could open."""

from __future__ import annotations

import os
import subprocess
import sys

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
