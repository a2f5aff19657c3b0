"""Delivery connects only to addresses the URL guard checked: a destination name re-pointed at a
metadata or link-local address after it was saved is refused where the connection is made, and
the row is dead-lettered with the reason. DNS answers are scripted through `urlguard.resolve_addresses`."""

from __future__ import annotations

import ipaddress

import pytest

from delivery import client as delivery_client
from delivery.engine import deliver_batch
from delivery.models import Delivery, DeliveryStatus
from integrations import urlguard
from integrations.registry import exporter_class
from tests.fakes.destinations import FakeWebhookReceiver

from .scripted import make_delivery, make_integration

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_client_and_resolutions():
    delivery_client.close_http_client()  # no kept-alive connection from another test
    urlguard.forget_resolutions()
    yield
    delivery_client.close_http_client()
    urlguard.forget_resolutions()


def _answers(monkeypatch, *answers: str) -> list[str]:
    """Every look-up answers the next address (the last one repeats); returns the names asked."""
    queue = [ipaddress.ip_address(a) for a in answers]
    asked: list[str] = []

    def resolve(host: str) -> list:
        asked.append(host)
        return [queue.pop(0) if len(queue) > 1 else queue[0]]

    monkeypatch.setattr(urlguard, "resolve_addresses", resolve)
    return asked


def _hook(team, receiver: FakeWebhookReceiver, host: str):
    config = exporter_class("webhook").validate_config({"url": f"http://{host}:{receiver.port}/hook"})
    return make_integration(team, "hook", config=config)


def test_a_destination_name_is_delivered_to_through_the_guards_answer(team, published, monkeypatch):
    asked = _answers(monkeypatch, "127.0.0.1")
    with FakeWebhookReceiver() as receiver:
        _hook(team, receiver, "hooks.example.test")
        row = make_delivery(team, "hook")

        deliver_batch([row.pk])

        assert [t["id"] for t in receiver.traces] == [row.trace.trace_id]
    assert Delivery.objects.get(pk=row.pk).status == DeliveryStatus.DELIVERED
    assert set(asked) == {"hooks.example.test"}


@pytest.mark.parametrize("rebound", ["169.254.169.254", "fe80::1"])
def test_a_name_rebound_between_the_send_check_and_the_connection_is_refused(team, published, monkeypatch, rebound):
    # Saved while it answered loopback; still loopback at the send-time check; the connection's own
    # look-up (the cached answer expired meanwhile) gets the metadata / link-local address.
    monkeypatch.setattr(urlguard, "ADDRESS_TTL_S", 0.0)
    _answers(monkeypatch, "127.0.0.1", "127.0.0.1", rebound)
    with FakeWebhookReceiver() as receiver:
        _hook(team, receiver, "hooks.example.test")
        row = make_delivery(team, "hook")

        deliver_batch([row.pk])

        assert receiver.requests == []
    row.refresh_from_db()
    assert row.status == DeliveryStatus.DEAD
    assert "refused destination address: hooks.example.test resolves to" in row.last_error
    assert rebound in row.last_error
