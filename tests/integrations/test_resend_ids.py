"""A re-send is the same at the destination, for every exporter: a trace's wire form (and so every
id in it) does not depend on the batch it travels in or on the attempt, and the same batch sent
again is the same request body. Delivery re-forms a batch whole for a re-send (delivery.batches),
so the webhook's batch-level delivery id repeats too; it stands for the set of traces."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from integrations.exporters.base import Encoded, Exporter
from integrations.exporters.otlp_encoding import EncodedSpan
from integrations.registry import PLATFORMS

from .conftest import config_for, make_error_record, make_exporter, make_record

HOST = "http://127.0.0.1:9"
SECRET = "whsec_0123456789abcdef"  # the webhook signs: its signature is the one header that changes
# Headers that legitimately differ between two sends of the same body.
PER_SEND = {"x-tracerelay-signature", "content-length"}


@pytest.fixture
def sent() -> Iterator[tuple[httpx.Client, list[httpx.Request]]]:
    requests: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        request.read()
        requests.append(request)
        return httpx.Response(200, json={})

    with httpx.Client(transport=httpx.MockTransport(answer)) as client:
        yield client, requests


def _wire(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, EncodedSpan):
        return item.span.SerializeToString(deterministic=True) + repr(sorted(item.resource.items())).encode()
    raise AssertionError(f"unknown encoded item {type(item).__name__}")


def _traces() -> list[Any]:
    return [make_record(trace_id=f"trc_{n}") for n in range(3)] + [make_error_record(trace_id="trc_failed")]


def _exporter(platform: str, client: httpx.Client) -> Exporter:
    config = config_for(platform, HOST)
    return make_exporter(platform, {**config, "secret": SECRET} if platform == "webhook" else config, client)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_trace_is_encoded_the_same_in_any_batch(platform, sent):
    client, _ = sent
    exporter = _exporter(platform, client)
    traces = _traces()

    alone = {r.trace_id: _wire(exporter.encode(r)) for r in traces}
    batched, refused = exporter.encode_batch(list(reversed(traces)))

    assert refused == {}
    assert {e.record.trace_id: _wire(e.item) for e in batched} == alone


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_same_batch_sent_again_is_the_same_request(platform, sent):
    client, requests = sent
    exporter = _exporter(platform, client)
    traces = _traces()

    exporter.export(traces)
    first = list(requests)
    requests.clear()
    _exporter(platform, client).export(traces)  # another attempt, another worker

    assert len(requests) == len(first) > 0
    for a, b in zip(first, requests, strict=True):
        assert (a.method, a.url, a.content) == (b.method, b.url, b.content)
        same = {k: v for k, v in a.headers.items() if k not in PER_SEND}
        assert same == {k: v for k, v in b.headers.items() if k not in PER_SEND}


def test_the_webhook_delivery_id_stands_for_the_set_of_traces(sent):
    client, requests = sent
    exporter = _exporter("webhook", client)
    a, b, c, d = _traces()

    def delivery_id(*records: Any) -> str:
        exporter.export_encoded([Encoded(r, exporter.encode(r)) for r in records])
        return requests[-1].headers["x-tracerelay-delivery"]

    assert delivery_id(a, b, c) == delivery_id(c, a, b)  # the same set: the same id, in any order
    assert delivery_id(a, b) != delivery_id(a, b, c)  # a smaller set is another batch
    assert delivery_id(a, b, d) != delivery_id(a, b, c)
