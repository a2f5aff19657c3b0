"""Property-based fuzzing of every API operation (but the proxy's) against the OpenAPI document.

Schemathesis generates valid and invalid requests from /api/v1/schema/ and checks every response:
no 500s, a documented status code, the documented content type, and a body that matches the
documented schema. Bounded in examples so the whole file runs in well under a minute.
"""

from __future__ import annotations

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.config import SchemathesisConfig

from ..factories import ApiKeyFactory, PlantFactory, TeamFactory, TraceFactory

MAX_EXAMPLES = 60


@pytest.fixture
def fuzz_key(db):
    team = TeamFactory(name="fuzz")
    PlantFactory(team=team)
    TraceFactory(team=team, trace_id="known", tags=["a"], metadata={"k": "v"})
    return ApiKeyFactory(team=team)._raw


# Loaded when the module is collected (the schema view needs no database). schemathesis' lazy
# `from_fixture` loader does not work with pytest 9, hence this form.
# Positive-data acceptance (a schema-valid request must be accepted) is left out: JSON Schema cannot
# say "total_tokens = prompt_tokens + completion_tokens" or "a cursor this API gave out", so a valid-
# looking request may rightly be a 400. Every other check runs; 413 counts as a rejection.
CONFIG = SchemathesisConfig.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {"enabled": False},
            "negative_data_rejection": {"expected-statuses": [400, 401, 403, 404, 405, 406, 412, 413, 415, 422]},
        }
    }
)
# Left out: the proxy (it forwards to a real upstream) and the integrations' connection tests (they
# connect to whatever URL a generated config names: a fuzzer must not aim traffic off this machine).
schema = (
    schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application(), config=CONFIG)
    .include(path_regex=r"^/(api/v1/(traces|routing|integrations|deliveries|upstreams|auth|teams)|plants)")
    .exclude(path_regex=r"^/api/v1/integrations/(\{[^}]+\}/)?test$")
)


@pytest.fixture
def keep_connection():
    """Like Django's test client: keep the test's connection (and its transaction) across requests."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_the_api_keeps_its_documented_promises(case, fuzz_key, keep_connection):
    case.call_and_validate(headers={"Authorization": f"Bearer {fuzz_key}"})
