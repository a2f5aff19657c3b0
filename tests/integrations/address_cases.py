"""One integration per platform holding stored secrets, and how to move its address: shared by the
API tests (test_address_secrets.py) and the dashboard's (tests/dashboard/test_integration_address.py)."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from integrations.models import Integration
from integrations.services import IntegrationInput, integration_create

ADDRESS_CHANGED = "Give the secret again: the address changed"


@dataclass(frozen=True)
class Case:
    """``config``: as created, every secret set. ``move``: a config patch sending it elsewhere (it may
    use an alias); ``cosmetic``: one naming the same address in other words. ``again``: every stored
    secret given in full (credential headers with the plain ones). ``missing``: the error keys of a
    move that gives none of them. ``field``/``new``: the move as the dashboard's form sees it."""

    platform: str
    config: dict[str, Any]
    move: dict[str, Any]
    cosmetic: dict[str, Any]
    again: dict[str, Any]
    missing: tuple[str, ...]
    field: str
    new: str

    def stored_values(self) -> tuple[str, ...]:
        """The stored secret values, to look for in what reached a server."""
        values = [v for k, v in self.config.items() if k != "headers" and isinstance(v, str) and "stored" in v]
        values += [v.split()[-1] for v in (self.config.get("headers") or {}).values() if "stored" in v]
        return tuple(values)


CASES: dict[str, Case] = {
    "langfuse": Case(
        platform="langfuse",
        config={"publicKey": "pk-lf-1", "secretKey": "sk-lf-stored-0001", "host": "https://cloud.langfuse.com"},
        move={"host": "https://langfuse.elsewhere.test"},
        cosmetic={"host": "HTTPS://Cloud.Langfuse.COM:443/"},
        again={"secretKey": "sk-lf-stored-0001"},
        missing=("config.secretKey",),
        field="host",
        new="https://langfuse.elsewhere.test",
    ),
    "langsmith": Case(
        platform="langsmith",
        config={"apiKey": "lsv2-stored-0001", "endpoint": "https://api.smith.langchain.com"},
        move={"endpoint": "https://eu.api.smith.langchain.com"},
        cosmetic={"endpoint": "https://API.smith.langchain.com/"},
        again={"apiKey": "lsv2-stored-0001"},
        missing=("config.apiKey",),
        field="endpoint",
        new="https://eu.api.smith.langchain.com",
    ),
    "phoenix": Case(
        platform="phoenix",
        config={
            "host": "http://127.0.0.1:6006",
            "apiKey": "px-stored-0001",
            "headers": {"X-Api-Key": "px-hdr-stored-01", "X-Team": "search"},
        },
        move={"host": "http://127.0.0.1:6007"},
        cosmetic={"host": "HTTP://127.0.0.1:6006/"},
        again={"apiKey": "px-stored-0001", "headers": {"X-Api-Key": "px-hdr-stored-01", "X-Team": "search"}},
        missing=("config.apiKey", "config.headers.X-Api-Key"),
        field="host",
        new="http://127.0.0.1:6007",
    ),
    "mlflow": Case(
        platform="mlflow",
        config={"host": "http://127.0.0.1:5000", "experimentId": "1", "token": "mlf-stored-0001"},
        move={"trackingUri": "http://127.0.0.1:5001"},
        cosmetic={"host": "http://127.0.0.1:5000/"},
        again={"token": "mlf-stored-0001"},
        missing=("config.token",),
        field="host",
        new="http://127.0.0.1:5001",
    ),
    "mlflow-basic-auth": Case(
        platform="mlflow",
        config={"host": "http://127.0.0.1:5000", "experimentId": "1", "username": "ml", "password": "pw-stored-0001"},
        move={"host": "http://127.0.0.1:5001"},
        cosmetic={"host": "http://127.0.0.1:5000//"},
        again={"password": "pw-stored-0001"},
        missing=("config.password",),
        field="host",
        new="http://127.0.0.1:5001",
    ),
    "helicone": Case(
        platform="helicone",
        config={"apiKey": "sk-helicone-stored-01"},
        move={"host": "https://helicone.elsewhere.test"},
        cosmetic={"endpoint": "https://API.worker.helicone.ai:443"},
        again={"apiKey": "sk-helicone-stored-01"},
        missing=("config.apiKey",),
        field="endpoint",
        new="https://helicone.elsewhere.test",
    ),
    "helicone-api-url": Case(
        platform="helicone",
        config={"apiKey": "sk-helicone-stored-01"},
        move={"apiUrl": "https://eu.api.helicone.ai"},
        cosmetic={"apiUrl": "https://api.helicone.ai/"},
        again={"apiKey": "sk-helicone-stored-01"},
        missing=("config.apiKey",),
        field="apiUrl",
        new="https://eu.api.helicone.ai",
    ),
    "datadog-site": Case(
        platform="datadog",
        config={"apiKey": "dd-stored-0001", "mlApp": "shop"},
        move={"site": "datadoghq.eu"},
        cosmetic={"site": "DatadogHQ.com"},
        again={"apiKey": "dd-stored-0001"},
        missing=("config.apiKey",),
        field="site",
        new="datadoghq.eu",
    ),
    "datadog-endpoint": Case(
        platform="datadog",
        config={"apiKey": "dd-stored-0001", "mlApp": "shop", "endpoint": "https://dd-proxy.corp.test"},
        move={"endpoint": "https://dd-proxy.elsewhere.test"},
        cosmetic={"endpoint": "https://DD-Proxy.corp.test/"},
        again={"apiKey": "dd-stored-0001"},
        missing=("config.apiKey",),
        field="endpoint",
        new="https://dd-proxy.elsewhere.test",
    ),
    "weave": Case(
        platform="weave",
        config={"apiKey": "wandb-stored-0001", "entity": "team", "project": "proj"},
        move={"host": "https://weave.elsewhere.test/traces"},
        cosmetic={"host": "https://TRACE.wandb.ai"},
        again={"apiKey": "wandb-stored-0001"},
        missing=("config.apiKey",),
        field="host",
        new="https://weave.elsewhere.test/traces",
    ),
    "otlp": Case(
        platform="otlp",
        config={"endpoint": "http://127.0.0.1:4318/v1/traces", "headers": {"Authorization": "Bearer otlp-stored-01"}},
        move={"url": "http://127.0.0.1:4319/v1/traces"},
        cosmetic={"endpoint": "http://127.0.0.1:4318/v1/traces/"},
        again={"headers": {"Authorization": "Bearer otlp-stored-01"}},
        missing=("config.headers.Authorization",),
        field="endpoint",
        new="http://127.0.0.1:4319/v1/traces",
    ),
    "webhook": Case(
        platform="webhook",
        config={
            "url": "https://hooks.corp.test/in",
            "secret": "whsec-stored-0123456789",
            "headers": {"Authorization": "Bearer hook-stored-01", "X-Env": "prod"},
        },
        move={"url": "https://hooks.corp.test/other"},
        cosmetic={"url": "https://HOOKS.corp.test:443/in/"},
        again={
            "secret": "whsec-stored-0123456789",
            "headers": {"Authorization": "Bearer hook-stored-01", "X-Env": "prod"},
        },
        missing=("config.headers.Authorization", "config.secret"),
        field="url",
        new="https://hooks.corp.test/other",
    ),
}

CASE_PARAMS = [pytest.param(case, id=name) for name, case in CASES.items()]


def make_integration(team: Any, case: Case, name: str = "dest") -> Integration:
    return integration_create(
        team_id=team.pk,
        data=IntegrationInput(
            name=name,
            platform=case.platform,
            config=case.config,
            default_tags=[],
            metadata_mapping={},
            timeout_s=5.0,
            retry_policy={},
        ),
        actor="test",
    )


def no_dns(host: str) -> list[Any]:
    """The resolver of a machine without DNS: the example names above resolve to nothing."""
    raise OSError(f"{host}: no DNS in tests")


def leaked(requests: Iterable[Any], secrets: Iterable[str]) -> list[str]:
    """The secrets found in any recorded request: headers (Basic auth decoded too), path and body."""
    seen: list[str] = []
    for request in requests:
        texts = [request.path, request.content.decode("utf-8", "replace"), *_header_texts(request.headers)]
        seen += [secret for secret in secrets if any(secret in text for text in texts)]
    return sorted(set(seen))


def _header_texts(headers: Mapping[str, str]) -> list[str]:
    texts = [f"{k}: {v}" for k, v in headers.items()]
    for value in headers.values():
        if value.lower().startswith("basic "):
            texts.append(base64.b64decode(value.split()[-1] + "==").decode("utf-8", "replace"))
    return texts
