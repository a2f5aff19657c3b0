"""End to end to REAL destinations: `phoenix serve` and `mlflow server` on loopback receive traces
through rules and a Celery worker, and give them back through their own read APIs. A replay of a
delivered trace must not make a second copy there (stable ids derived from the trace id)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from delivery.models import Delivery, DeliveryStatus
from integrations.exporters import ids

from .conftest import trace, wait_for
from .processes import MLFLOW_BIN, PHOENIX_BIN, MlflowServer, PhoenixServer

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="session")
def platform_servers(e2e_dir: Path) -> Iterator[tuple[PhoenixServer, MlflowServer]]:
    for binary in (PHOENIX_BIN, MLFLOW_BIN):
        if not binary.exists():
            pytest.fail(f"{binary} is missing: bin/test installs arize-phoenix and mlflow into their own venvs")
    phoenix, mlflow = PhoenixServer(e2e_dir), MlflowServer(e2e_dir)
    phoenix.start()
    mlflow.start()  # both boot at once: each takes 15-30 s
    try:
        phoenix.wait_ready()
        mlflow.wait_ready()
        yield phoenix, mlflow
    finally:
        phoenix.stop()
        mlflow.stop()


def _phoenix_spans(phoenix: PhoenixServer, project: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{phoenix.url}/v1/projects/{project}/spans", params={"limit": 100}, timeout=10)
    if response.status_code == 404:  # the project appears with its first span
        return []
    response.raise_for_status()
    return response.json()["data"]


def _mlflow_traces(mlflow: MlflowServer, experiment_id: str) -> list[dict[str, Any]]:
    body = {"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}]}
    response = httpx.post(f"{mlflow.url}/api/3.0/mlflow/traces/search", json=body, timeout=10)
    response.raise_for_status()
    return response.json().get("traces", [])


def _mlflow_experiment(mlflow: MlflowServer) -> str:
    name = f"tracerelay-e2e-{uuid.uuid4().hex[:8]}"
    response = httpx.post(f"{mlflow.url}/api/2.0/mlflow/experiments/create", json={"name": name}, timeout=30)
    response.raise_for_status()
    return str(response.json()["experiment_id"])


def test_phoenix_and_mlflow_receive_routed_traces_once(platform_servers, product, team, api, start_worker):
    phoenix, mlflow = platform_servers
    project = f"tracerelay-e2e-{uuid.uuid4().hex[:8]}"
    experiment = _mlflow_experiment(mlflow)
    policy = {"max_attempts": 5, "base_delay_s": 0.5, "max_delay_s": 5}
    product.integration("phoenix", "phoenix", {"host": phoenix.url, "projectName": project}, retry_policy=policy)
    product.integration("mlflow", "mlflow", {"host": mlflow.url, "experimentId": experiment}, retry_policy=policy)
    product.rules(
        {
            "name": "gpt to both",
            "conditions": {"model": "gpt-*"},
            "destinations": ["phoenix", "mlflow"],
            "tags": ["e2e"],
        },
        {"name": "claude to mlflow", "condition": 'provider == "anthropic"', "destinations": ["mlflow"]},
    )
    start_worker()

    gpt, claude = product.ingest(
        trace(metadata={"customer": "acme"}, session_id="s-1", user_id="u-1"),
        trace(model="claude-sonnet-4-5", provider="anthropic", prompt_tokens=30, completion_tokens=5),
    )

    # Phoenix: the gpt trace only, as an LLM span with OpenInference attributes.
    spans = wait_for(lambda: _phoenix_spans(phoenix, project), 60, "the span in Phoenix")
    assert len(spans) == 1
    span = spans[0]
    assert span["context"]["trace_id"] == ids.otel_trace_id(team.pk, gpt).hex()
    assert span["span_kind"] == "LLM"
    attrs = span["attributes"]
    assert attrs["tracerelay.trace_id"] == gpt
    assert attrs["llm.model_name"] == "gpt-4o"
    assert (attrs["llm.token_count.prompt"], attrs["llm.token_count.completion"]) == (12, 7)
    assert "e2e" in attrs["tag.tags"]
    assert attrs["llm.input_messages.0.message.content"] == "Say hello"

    # MLflow: both traces, with the token usage it computed from the GenAI attributes.
    found = wait_for(lambda: len(_mlflow_traces(mlflow, experiment)) == 2 and _mlflow_traces(mlflow, experiment), 60)
    by_id = {t["trace_id"]: t for t in found}
    expected = {f"tr-{ids.otel_trace_id(team.pk, t).hex()}": t for t in (gpt, claude)}
    assert set(by_id) == set(expected)
    usage = {expected[k]: v["trace_metadata"]["mlflow.trace.tokenUsage"] for k, v in by_id.items()}
    assert '"input_tokens": 12' in usage[gpt] and '"output_tokens": 7' in usage[gpt]
    assert '"input_tokens": 30' in usage[claude] and '"output_tokens": 5' in usage[claude]
    assert all(t["state"] == "OK" for t in found)

    # The API shows the deliveries per destination.
    delivered = wait_for(
        lambda: Delivery.objects.filter(status=DeliveryStatus.DELIVERED).count() == 3, 20, "three delivered rows"
    )
    assert delivered
    assert {d["destination"] for d in product.deliveries(trace=gpt)} == {"phoenix", "mlflow"}

    # Send the gpt trace to both again (a replay): the destinations keep one copy each.
    for row in Delivery.objects.filter(trace__trace_id=gpt):
        Delivery.objects.filter(pk=row.pk).update(status=DeliveryStatus.FAILED)
        assert api.post(f"/api/v1/deliveries/{row.pk}/replay").status_code == 202
    wait_for(
        lambda: (
            set(Delivery.objects.filter(trace__trace_id=gpt, replay_count=1).values_list("status", flat=True))
            == {DeliveryStatus.DELIVERED}
        ),
        30,
        "the replays",
    )
    assert len(_phoenix_spans(phoenix, project)) == 1
    assert len(_mlflow_traces(mlflow, experiment)) == 2
