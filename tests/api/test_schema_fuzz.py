"""Schemathesis against a live server: `schemathesis run` with every check (`[checks] enabled = true`
in the config file, what `--checks all` selects) and a fixed seed, on every API operation but the
proxy's and the integrations' connection tests, must find nothing.

The server is a real one on a loopback port (pytest-django's live server: Django's threaded WSGI
server over the test database), with a seeded team, key, plant, trace and integration. The run is
bounded (`MAX_EXAMPLES` per operation and phase; about two minutes on a quiet 2-core machine) and
reproducible (`SEED`). tests/api/schemathesis.toml holds the configuration: the statuses a
schema-violating request may get (never 412: bodies are validated before If-Match), and the
operations where `positive_data_acceptance` is off, each with the rule JSON Schema cannot state.

Left out: the proxy (it forwards to a real upstream) and the integrations' connection tests (they
connect to whatever URL a generated config names: a fuzzer must not aim traffic off this machine).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ..factories import ApiKeyFactory, IntegrationFactory, PlantFactory, TeamFactory, TraceFactory

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20261123
MAX_EXAMPLES = 10
CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
INCLUDE = r"^/(api/v1/(traces|routing|integrations|deliveries|upstreams|pii|analytics|auth|teams)|plants)"
EXCLUDE = r"^/api/v1/integrations/(\{[^}]+\}/)?test$"


def test_schemathesis_finds_nothing_against_a_live_server(live_server, tmp_path) -> None:
    team = TeamFactory(name="fuzz")
    PlantFactory(team=team)
    TraceFactory(team=team, trace_id="known", tags=["a"], metadata={"k": "v"})
    IntegrationFactory(team=team, name="langfuse-prod", platform="langfuse", config={})
    key = ApiKeyFactory(team=team, environment="production")._raw
    # The schema, read from the live server once with a patient timeout (building it takes seconds on
    # a loaded machine; schemathesis gives a URL 10 s).
    schema = httpx.get(f"{live_server.url}/api/v1/schema/?format=json", timeout=180)
    assert schema.status_code == 200
    (tmp_path / "schema.json").write_bytes(schema.content)
    argv = [
        str(SCHEMATHESIS),
        "--config-file",
        str(CONFIG),
        "run",
        str(tmp_path / "schema.json"),
        "--url",
        live_server.url,
        "--request-timeout",
        "60",
        "--seed",
        str(SEED),
        "--max-examples",
        str(MAX_EXAMPLES),
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--include-path-regex",
        INCLUDE,
        "--exclude-path-regex",
        EXCLUDE,
        "--header",
        f"Authorization: Bearer {key}",
        "--no-color",
        "--output-truncate",
        "false",
    ]
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-30_000:]
    assert "Tested: " in output, output[-5_000:]  # it did test operations
