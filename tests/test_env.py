"""Settings refuse a boolean they cannot read, naming the variable, instead of reading it as False."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.settings.env import StrictEnv


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
