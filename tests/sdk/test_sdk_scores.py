"""`tracerelay.score(...)` against the real server under test: the score is stored with the type of
its value; a refusal or a missing trace is None and a log line, never an exception."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import tracerelay
from tracerelay import instrument

from traces.models import Score

from ..factories import ApiKeyFactory, TraceFactory

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _sdk_reset() -> Iterator[None]:
    yield
    tracerelay.shutdown(timeout=2)
    instrument.uninstall()


def test_the_sdk_posts_a_score(live_server, caplog) -> None:
    key = ApiKeyFactory()
    trace = TraceFactory(team=key.team, trace_id="trc-sdk-score")
    tracerelay.init(api_key=key._raw, base_url=live_server.url, instrument=False)

    stored = tracerelay.score("trc-sdk-score", "thumbs", True, comment="great", source="human")

    assert stored is not None and stored["data_type"] == "boolean" and stored["value"] is True
    score = Score.objects.get()
    assert (score.trace_id, score.name, score.comment, score.source) == (trace.pk, "thumbs", "great", "human")

    assert tracerelay.score("no-such-trace", "thumbs", True) is None
    assert tracerelay.score("trc-sdk-score", "bad name", 1) is None
    assert tracerelay.score("trc-sdk-score", "q", float("nan")) is None
    assert Score.objects.count() == 1
    assert "refused" in caplog.text


def test_the_sdk_scores_a_run_on_its_root(live_server, caplog) -> None:
    key = ApiKeyFactory()
    root = TraceFactory(team=key.team, run_id="run-sdk", trace_id="run-sdk-root", kind="chain")
    TraceFactory(team=key.team, run_id="run-sdk", trace_id="run-sdk-llm", parent_id="run-sdk-root")
    tracerelay.init(api_key=key._raw, base_url=live_server.url, instrument=False)

    stored = tracerelay.score(run_id="run-sdk", name="helpful", value=0.9)

    assert stored is not None and stored["trace_id"] == "run-sdk-root" and stored["value"] == 0.9
    assert Score.objects.get().trace_id == root.pk
    assert tracerelay.score(run_id="no-such-run", name="q", value=1) is None
    assert tracerelay.score("run-sdk-root", "q", 1, run_id="run-sdk") is None  # one of the two
    assert tracerelay.score(run_id="run-sdk", name="q") is None
    assert Score.objects.count() == 1
    assert "one of them" in caplog.text and "needs a name and a value" in caplog.text
