"""The policies where they apply: ingest stores what the `stored` mode leaves (and the kinds found
on the trace, never the values), and delivery gives each destination its entry's mode."""

from __future__ import annotations

import json

import pytest

from privacy.models import PiiPolicy
from privacy.records import export_records
from privacy.selectors import compiled_policy
from traces.models import Trace
from traces.records import TraceRecord

pytestmark = pytest.mark.django_db

EMAIL = "ada.lovelace@example.com"
KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"


def _body(**extra):
    return {
        "model": "gpt-4o",
        "input": [{"role": "user", "content": f"Mail {EMAIL} please"}],
        "output": "Sent.",
        "metadata": {"user": {"email": EMAIL}, "plan": "pro"},
        "status": "error",
        "error": {"type": "AuthError", "message": f"bad key {KEY}"},
        **extra,
    }


def _policy(team, mode, **extra):
    PiiPolicy.objects.update_or_create(team=team, defaults={"stored_mode": mode, "version": 1, **extra})
    from privacy.selectors import publish_version

    publish_version(team.pk)


def test_an_off_policy_stores_the_trace_as_sent(api, team):
    response = api.post("/api/v1/traces", _body(), format="json")
    assert response.status_code == 201
    trace = Trace.objects.get(team=team)
    assert EMAIL in json.dumps(trace.input) and trace.pii is None
    assert api.get(f"/api/v1/traces/{trace.trace_id}").json()["pii"] is None


def test_redact_before_storage_keeps_no_value_and_counts_kinds(api, team):
    _policy(team, "redact")
    response = api.post("/api/v1/traces", _body(), format="json")
    assert response.status_code == 201, response.content
    trace = Trace.objects.get(team=team)
    stored = json.dumps([trace.input, trace.output, trace.metadata, trace.error_message])
    assert EMAIL not in stored and KEY not in stored
    assert trace.input == [{"role": "user", "content": "Mail [EMAIL] please"}]
    assert trace.metadata == {"user": {"email": "[EMAIL]"}, "plan": "pro"}
    assert (trace.error_type, trace.error_message) == ("AuthError", "bad key [SECRET]")
    assert trace.pii == {"mode": "redact", "kinds": {"EMAIL": 2, "SECRET": 1}}
    detail = api.get(f"/api/v1/traces/{trace.trace_id}").json()
    assert detail["pii"] == {"mode": "redact", "kinds": {"EMAIL": 2, "SECRET": 1}}
    assert EMAIL not in json.dumps(detail)


def test_drop_before_storage_empties_the_fields_holding_pii(api, team):
    _policy(team, "drop")
    api.post("/api/v1/traces/batch", {"traces": [_body(), _body(input="nothing here", metadata={})]}, format="json")
    with_pii, without = Trace.objects.filter(team=team).order_by("received_at", "id")
    assert with_pii.input is None and with_pii.output == "Sent."
    assert (
        with_pii.metadata == {"user": {}, "plan": "pro"} and with_pii.error_message == "" and with_pii.status == "error"
    )
    assert without.input == "nothing here" and without.pii == {"mode": "drop", "kinds": {"SECRET": 1}}


def test_a_policy_put_applies_to_the_next_trace(api, team):
    compiled_policy(team.pk)  # this process holds "off"
    assert api.put("/api/v1/pii/policy", {"stored": {"mode": "hash"}}, format="json").status_code == 200
    api.post("/api/v1/traces", _body(), format="json")
    trace = Trace.objects.get(team=team)
    assert trace.metadata["user"]["email"].startswith("[EMAIL:") and trace.pii["mode"] == "hash"


def test_each_destination_gets_its_entrys_mode_and_others_what_was_stored(team):
    _policy(team, "detect", destinations={"saas": "redact", "warehouse": "hash"})
    record = TraceRecord(
        trace_id="t1", team_id=team.pk, model="m", input=f"to {EMAIL}", metadata={"e": EMAIL}, error_message=KEY
    )
    (saas,) = export_records(team.pk, "saas", [record])
    (selfhosted,) = export_records(team.pk, "selfhosted", [record])
    (warehouse,) = export_records(team.pk, "warehouse", [record])
    assert (saas.input, saas.metadata, saas.error_message) == ("to [EMAIL]", {"e": "[EMAIL]"}, "[SECRET]")
    assert selfhosted is record
    assert warehouse.input == f"to {warehouse.metadata['e']}" and warehouse.metadata["e"].startswith("[EMAIL:")
    assert record.input == f"to {EMAIL}"  # the stored record is not modified
