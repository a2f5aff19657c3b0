"""The diagnostic bundle holds no secret: every kind of secret the server knows is planted (settings,
connection URLs, every platform's secret fields and credential headers, API keys, user passwords,
keys pasted into traces and echoed in destination errors), a bundle is built through the dashboard
and the command, and every file in the zip is searched for each value in plain, base64 and
URL-encoded form."""

from __future__ import annotations

import base64
import io
import json
import secrets
import zipfile
from urllib.parse import quote, quote_plus

import pytest
from cryptography.fernet import Fernet
from django.core.management import CommandError, call_command

from config import crypto, invalidation
from config.celery import app
from debugmode.models import DebugRecord
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from diagnostics.bundle import SETTINGS_ALLOWED, build_bundle
from integrations.models import Integration
from integrations.registry import PLATFORMS, exporter_class
from tests.e2e.sink import WebhookSink
from tests.factories import ApiKeyFactory, IntegrationFactory, TraceFactory, UserFactory

pytestmark = pytest.mark.django_db

FILES = {
    "README.txt",
    "versions.json",
    "settings.json",
    "health.json",
    "queues.json",
    "deliveries.json",
    "errors.json",
    "debug_records.json",
}


def _planted(label: str) -> str:
    return f"{label}-PLANTED-{secrets.token_hex(8)}"


@pytest.fixture
def fernet_key(settings):
    key = Fernet.generate_key().decode()
    settings.TRACERELAY_FERNET_KEYS = [key]
    crypto._fernet.cache_clear()
    yield key
    crypto._fernet.cache_clear()


@pytest.fixture
def planted(settings, team, fernet_key, monkeypatch):
    """Secrets everywhere; returns every planted value."""
    assert app.conf.broker_url  # read now: the running app keeps the real broker; only the setting changes
    invalidation.ensure_listening()
    values: list[str] = [fernet_key]

    settings.SECRET_KEY = _planted("secret-key")
    db_password = _planted("dbpass")
    monkeypatch.setitem(settings.DATABASES["default"], "PASSWORD", db_password)
    settings.EMAIL_HOST_PASSWORD = _planted("mailpass")
    redis_password = _planted("redispass")
    settings.CELERY_BROKER_URL = f"redis://:{redis_password}@127.0.0.1:6379/0"
    settings.TRACERELAY_METRICS_TOKEN = _planted("metrics-token")  # a setting nobody put on the allow-list
    values += [settings.SECRET_KEY, db_password, settings.EMAIL_HOST_PASSWORD, redis_password]
    values.append(settings.TRACERELAY_METRICS_TOKEN)

    # Every platform's secret fields, stored encrypted as the integrations API stores them, and
    # credential-bearing custom headers.
    for platform in PLATFORMS:
        secret = {name: _planted(f"{platform}-{name}") for name in exporter_class(platform).secret_fields}
        secret["headers"] = {"Authorization": f"Bearer {_planted('hdr')}", "X-Api-Key": _planted("xkey")}
        values += [v for k, v in secret.items() if k != "headers"]
        values += [v.removeprefix("Bearer ") for v in secret["headers"].values()]
        Integration.objects.create(
            team=team,
            name=f"{platform}-planted",
            platform=platform,
            config={"headers": {"X-Team": "blue"}},
            secrets=crypto.encrypt_json(secret),
        )

    key = ApiKeyFactory(team=team)
    values.append(key._raw)
    password = _planted("userpass")
    user = UserFactory(username="planted@example.com", password=password)
    values += [password, user.password]
    return values


def _forms(value: str) -> set[str]:
    raw = value.encode()
    return {
        value,
        quote(value, safe=""),
        quote_plus(value),
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
    }


def _assert_clean(data: bytes, values: list[str]) -> dict[str, str]:
    archive = zipfile.ZipFile(io.BytesIO(data))
    assert set(archive.namelist()) == FILES
    texts = {name: archive.read(name).decode() for name in archive.namelist()}
    for name, text in texts.items():
        for value in values:
            for form in _forms(value):
                assert form not in text, f"{name} holds a planted secret ({value[:12]}…)"
    return texts


def _traffic(team, debug_on, django_capture_on_commit_callbacks, pasted_key: str, header_secret: str):
    """A delivery with debug mode on, to a receiver that echoes the key back in a refusal."""
    with WebhookSink(secret="whsec_planted_signing_1") as sink:
        sink.always(401)
        IntegrationFactory(
            team=team,
            name="hook",
            platform="webhook",
            config={"url": sink.url, "headers": {"X-Auth-Token": header_secret}, "secret": "whsec_planted_signing_1"},
        )
        debug_on()
        trace = TraceFactory(team=team, input=f"use {pasted_key}")
        row = Delivery.objects.create(team=team, trace=trace, destination="hook", spec={"name": "hook", "fallback": []})
        deliver_batch([row.pk])
    assert DebugRecord.objects.filter(trace=trace, kind="export").exists()
    # A destination that echoed the credentials in its error body.
    Delivery.objects.filter(pk=row.pk).update(last_error=f"HTTP 401: invalid key {header_secret} ({pasted_key})")
    assert Delivery.objects.get(pk=row.pk).status == DeliveryStatus.DEAD


def test_the_dashboard_bundle_holds_no_secret(
    planted, team, owner, client, debug_on, django_capture_on_commit_callbacks
):
    pasted, header_secret = "sk-proj-Pl4nted0Key1234567890abcdefXYZ", _planted("hook-header")
    _traffic(team, debug_on, django_capture_on_commit_callbacks, pasted, header_secret)
    client.force_login(owner)
    response = client.get("/settings/advanced/bundle")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"].startswith('attachment; filename="tracerelay-diagnostics-')
    texts = _assert_clean(response.content, [*planted, pasted, header_secret, "whsec_planted_signing_1"])

    # ... and it still says what it should.
    assert json.loads(texts["health.json"])["database"] == "ok"
    assert json.loads(texts["versions.json"])["django"]
    summary = {d["destination"]: d for d in json.loads(texts["deliveries.json"])}
    assert summary["hook"]["by_status"] == {"dead": 1}
    assert "HTTP 401: invalid key [masked] ([masked])" == summary["hook"]["top_errors"][0]["error"]
    assert json.loads(texts["errors.json"])[0]["destination"] == "hook"
    assert json.loads(texts["debug_records.json"])[0]["data"]["exchanges"][0]["status"] == 401


def test_settings_come_from_the_allow_list_only(planted, team):
    texts = _assert_clean(build_bundle(team_id=team.pk), planted)
    copied = json.loads(texts["settings.json"])
    extra = {"REDIS_URL", "CELERY_BROKER_URL", "DATABASES", "CACHES", "SECRET_KEY", "TRACERELAY_FERNET_KEYS"}
    assert set(copied) <= set(SETTINGS_ALLOWED) | extra
    assert "TRACERELAY_METRICS_TOKEN" not in copied and "EMAIL_HOST_PASSWORD" not in copied
    assert copied["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/0"
    assert copied["SECRET_KEY"] == "set" and copied["TRACERELAY_FERNET_KEYS"] == "1 key(s)"
    assert set(copied["DATABASES"]["default"]) == {"ENGINE", "NAME", "HOST", "PORT", "CONN_MAX_AGE"}


def test_the_command_writes_the_bundle_for_every_team(
    planted, team, other_team, tmp_path, debug_on, django_capture_on_commit_callbacks
):
    pasted, header_secret = "sk-ant-api03-Pl4ntedKey0123456789abcdefghij", _planted("hook-header")
    _traffic(team, debug_on, django_capture_on_commit_callbacks, pasted, header_secret)
    output = tmp_path / "bundle.zip"
    call_command("diagnostic_bundle", "--output", str(output))
    texts = _assert_clean(output.read_bytes(), [*planted, pasted, header_secret])
    assert "hook" in texts["deliveries.json"]

    call_command("diagnostic_bundle", "--team", other_team.name, "--output", str(output))
    texts = _assert_clean(output.read_bytes(), planted)
    assert json.loads(texts["deliveries.json"]) == [] and json.loads(texts["debug_records.json"]) == []

    with pytest.raises(CommandError, match="No team named 'nope'"):
        call_command("diagnostic_bundle", "--team", "nope")
