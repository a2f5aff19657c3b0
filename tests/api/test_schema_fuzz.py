"""Schemathesis against a live server: `schemathesis run` with every check (`[checks] enabled = true`
in the config file, what `--checks all` selects) and a fixed seed, on every API operation but the
proxy's and the integrations' connection tests, must find nothing.

The server is a real one on a loopback port (pytest-django's live server: Django's threaded WSGI
server over the test database), with a seeded team, key, plant, trace and integration, a report
with a succeeded run (so its CSV and PDF downloads exist) and an alert that has fired (so its
history has an event); their ids are drawn for `report_id`, `run_id` and `alert_id` half the time
(`config_with_seeds`). The run is bounded (`MAX_EXAMPLES` per operation and phase; about two
minutes on a quiet 2-core machine before the reports and alerts operations joined, which added
about 40 s at a load average of 3) and reproducible (`SEED`). tests/api/schemathesis.toml holds
the configuration: the statuses a schema-violating request may get (never 412: bodies are
validated before If-Match), and the operations where `positive_data_acceptance` is off, each with
the rule JSON Schema cannot state.

Left out: the proxy (it forwards to a real upstream) and the integrations' connection tests (they
connect to whatever URL a generated config names: a fuzzer must not aim traffic off this machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import httpx
import pytest
from django.utils import timezone

from alerts import services as alert_services
from alerts.definition import parse_alert
from reports import services as report_services
from reports.definition import parse_definition
from reports.models import ReportRun, RunStatus
from traces.export import IMPORT_MEDIA_TYPES

from ..factories import ApiKeyFactory, IntegrationFactory, PlantFactory, TeamFactory, TraceFactory
from . import schemathesis_hooks

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20261123
MAX_EXAMPLES = 10
CONFIG = Path(__file__).with_name("schemathesis.toml")
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
INCLUDE = (
    r"^/(api/v1/(traces|runs|routing|integrations|deliveries|upstreams|pii|analytics|auth|teams|reports|alerts"
    r"|dashboards|prices)|plants)"
)
EXCLUDE = r"^/api/v1/integrations/(\{[^}]+\}/)?test$"


def test_schemathesis_finds_nothing_against_a_live_server(live_server, tmp_path) -> None:
    team = TeamFactory(name="fuzz")
    PlantFactory(team=team)
    TraceFactory(team=team, trace_id="known", tags=["a"], metadata={"k": "v"}, cost=Decimal("0.5"))
    config = config_with_seeds(tmp_path, seed_report_and_alert(team.pk))
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
        str(config),
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
    assert schemathesis_hooks.IMPORT_MEDIA_TYPES == IMPORT_MEDIA_TYPES
    env = {**os.environ, "SCHEMATHESIS_HOOKS": "schemathesis_hooks", "PYTHONPATH": str(Path(__file__).parent)}
    run = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-30_000:]
    assert "Tested: " in output, output[-5_000:]  # it did test operations


def seed_report_and_alert(team_id: int) -> dict[str, int]:
    """A report with a succeeded run (its files rendered for real) and an alert that fired once; their
    ids by path parameter name."""
    definition = parse_definition({"name": "weekly", "group_by": "model", "time_range": "7d", "schedule": "0 8 * * 1"})
    report = report_services.report_create(team_id=team_id, definition=definition, actor="fuzz")
    since, until = definition.period(timezone.now())
    run = ReportRun.objects.create(report=report, since=since, until=until)
    done = report_services.run_execute(run_id=run.pk, final=True)
    assert done is not None and done.status == RunStatus.SUCCEEDED and done.csv and done.pdf
    spec = parse_alert(
        {"name": "budget", "metric": "cost", "threshold": 0.1, "window": {"type": "rolling", "minutes": 60}}
    )
    alert, _ = alert_services.alert_create(team_id=team_id, spec=spec, actor="fuzz")
    assert alert_services.evaluate(alert.pk, timezone.now()).event == "fired"
    return {"report_id": report.pk, "run_id": run.pk, "alert_id": alert.pk}


def config_with_seeds(tmp_path: Path, ids: dict[str, int]) -> Path:
    """tests/api/schemathesis.toml plus the seeded objects' ids (known only now), drawn for their path
    parameters half the time: the fuzz then reaches a succeeded run's downloads and a fired alert's
    history, and the other half of the values stay random (404s)."""
    lines = [CONFIG.read_text(), "[dictionaries]"]
    lines += [f"seeded-{name} = {{ values = [{value}] }}" for name, value in ids.items()]
    lines.append("[parameters]")
    lines += [f'"path.{name}" = {{ dictionary = "seeded-{name}", probability = 0.5 }}' for name in ids]
    config = tmp_path / "schemathesis.toml"
    config.write_text("\n".join(lines) + "\n")
    return config
