"""Fake destination servers on 127.0.0.1 for tests (exporters, delivery faults, end-to-end).

`FakeServer` records requests and plays scripted replies (status, body, headers, delay, a
dropped connection); the platform fakes check the real wire format and auth of each destination.
See server.py and destinations.py for the API.
"""

from tests.fakes.destinations import (
    DecodedLog,
    DecodedSpan,
    FakeDatadog,
    FakeHelicone,
    FakeLangfuse,
    FakeLangSmith,
    FakeMlflow,
    FakeOtlpCollector,
    FakePhoenix,
    FakeWeave,
    FakeWebhookReceiver,
    basic_auth,
    decode_logs,
    decode_spans,
)
from tests.fakes.server import FakeServer, RecordedRequest, Reply

__all__ = [
    "DecodedLog",
    "DecodedSpan",
    "FakeDatadog",
    "FakeHelicone",
    "FakeLangSmith",
    "FakeLangfuse",
    "FakeMlflow",
    "FakeOtlpCollector",
    "FakePhoenix",
    "FakeServer",
    "FakeWeave",
    "FakeWebhookReceiver",
    "RecordedRequest",
    "Reply",
    "basic_auth",
    "decode_logs",
    "decode_spans",
]
