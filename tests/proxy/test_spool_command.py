"""``manage.py proxy_spool``: list the proxy traces the store refused, and replay them through the
normal store path (idempotently)."""

from __future__ import annotations

import io
import time
from pathlib import Path

import orjson
import pytest
from django.core.management import CommandError, call_command

from accounts.principals import KeyPrincipal
from tests.factories import ApiKeyFactory
from traces.ids import new_trace_id
from traces.models import Trace
from traces.proxy.capture import Capture, build_trace
from traces.proxy.rejected import rejected_dir
from traces.proxy.upstreams import builtin_targets
from traces.proxy.writer import Spool

pytestmark = pytest.mark.django_db

OPENAI, _ = builtin_targets("http://upstream.invalid/v1", "http://upstream.invalid")
RESPONSE = orjson.dumps(
    {
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
)


@pytest.fixture
def principal(team) -> KeyPrincipal:
    key = ApiKeyFactory(team=team, environment="production")
    return KeyPrincipal(key.id, key.team_id, key.environment, key.prefix, key.scopes)


@pytest.fixture
def spool_dir(tmp_path) -> Path:
    return tmp_path / "spool"


def _set_aside(spool_dir: Path, principal: KeyPrincipal, reason) -> str:
    """What the writer does with a trace the store refused."""
    capture = Capture(new_trace_id(), principal, OPENAI, "POST", "chat/completions")
    capture.started = time.time()
    capture.request_body = b'{"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}'
    capture.status_code = 200
    capture.response_body = RESPONSE
    capture.latency_ms = 12.5
    Spool(spool_dir).reject(principal, build_trace(capture, max_body=65536, max_metadata_keys=64), reason)
    return capture.trace_id


def _run(*args: str, spool_dir: Path) -> str:
    out = io.StringIO()
    call_command("proxy_spool", *args, "--spool-dir", str(spool_dir), stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_list_says_when_which_team_what_model_and_why(spool_dir, principal, team):
    first = _set_aside(spool_dir, principal, {"exception": "DataError('value out of range')"})
    second = _set_aside(spool_dir, principal, {"tags": ["at most 50 tags"]})

    output = _run("list", spool_dir=spool_dir)

    lines = output.splitlines()
    assert lines[0].split() == ["WHEN", "(UTC)", "TEAM", "TRACE", "ID", "MODEL", "WHY"]
    assert first in lines[1] and second in lines[2]
    assert f" {team.pk} " in lines[1] and "gpt-4o-mini" in lines[1]
    assert lines[1].endswith("DataError('value out of range')")
    assert lines[2].endswith("tags: at most 50 tags")
    assert lines[1][:4].isdigit()  # the time it was set aside
    assert "2 refused trace(s)" in lines[-1]


def test_an_empty_spool_says_so(spool_dir):
    assert "No refused proxy traces" in _run("list", spool_dir=spool_dir)


def test_replay_stores_the_chosen_trace_through_ingest_and_takes_it_out_of_the_spool(spool_dir, principal):
    first = _set_aside(spool_dir, principal, {"exception": "DataError('value out of range')"})
    second = _set_aside(spool_dir, principal, {"exception": "DataError('value out of range')"})

    output = _run("replay", "--id", first, spool_dir=spool_dir)

    assert "1 stored, 0 already stored, 0 still refused" in output
    trace = Trace.objects.get(trace_id=first)
    assert (trace.source, trace.model, trace.total_tokens) == ("proxy", "gpt-4o-mini", 7)
    assert not Trace.objects.filter(trace_id=second).exists()
    listed = _run("list", spool_dir=spool_dir)
    assert second in listed and first not in listed

    assert "1 stored" in _run("replay", "--all", spool_dir=spool_dir)
    assert Trace.objects.filter(trace_id=second).count() == 1
    assert list(rejected_dir(spool_dir).glob("*.jsonl")) == []


def test_replaying_a_trace_already_stored_stores_nothing_twice(spool_dir, principal):
    trace_id = _set_aside(spool_dir, principal, {"exception": "OperationalError"})
    _run("replay", "--all", spool_dir=spool_dir)
    # The same trace set aside again (say, a spool restored from a backup) and replayed again.
    Spool(spool_dir).reject(principal, {"id": trace_id, "model": "gpt-4o-mini"}, {"exception": "again"})

    output = _run("replay", "--all", spool_dir=spool_dir)

    assert "0 stored, 1 already stored, 0 still refused" in output
    assert Trace.objects.filter(trace_id=trace_id).count() == 1


def test_a_trace_still_refused_stays_with_the_new_reason(transactional_db, spool_dir, principal, team):
    # transactional_db: the team foreign key is checked when ingest's transaction commits.
    ghost = KeyPrincipal(principal.key_id, team.pk + 10_000, "production", "tr_prod_x", principal.scopes)
    orphan = _set_aside(spool_dir, ghost, {"exception": "IntegrityError('team')"})
    good = _set_aside(spool_dir, principal, {"exception": "DataError('value out of range')"})

    with pytest.raises(CommandError, match="1 trace\\(s\\) still refused"):
        _run("replay", "--all", spool_dir=spool_dir)

    assert Trace.objects.filter(trace_id=good).exists()
    listed = _run("list", spool_dir=spool_dir)
    assert orphan in listed and good not in listed
    assert "IntegrityError" in listed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("replay",), "needs --id"),
        (("replay", "--all", "--id", "trc_x"), "not both"),
        (("replay", "--id", "trc_unknown"), "not among the refused traces"),
        (("list", "--all"), "go with replay"),
    ],
)
def test_bad_arguments_are_refused(spool_dir, principal, args, message):
    _set_aside(spool_dir, principal, {"exception": "DataError"})
    with pytest.raises(CommandError, match=message):
        _run(*args, spool_dir=spool_dir)
