"""Whole applications in their own interpreter: two added lines, init before or after the imports, exit.

These run `python` on a script, so what is checked is what a user gets: the import hook on a clean
interpreter, the flush at exit, and an app that behaves the same with the service down and exits
soon after its last line (timed from the parent, which reads the output as it comes).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_tracerelay import BlackHole, FakeTracerelay, closed_port
from fake_transport import KEY

from tests.proxy.fake_upstream import CHAT_WORDS, FakeUpstream
from tests.sdk.output import OutputLines

APP = """
import anthropic
from openai import OpenAI

client = OpenAI(max_retries=0)
reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
print(reply.choices[0].message.content)
stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}], stream=True)
print("".join(chunk.choices[0].delta.content or "" for chunk in stream))
claude = anthropic.Anthropic(max_retries=0)
message = claude.messages.create(model="claude-haiku-4-5", max_tokens=32, messages=[{"role": "user", "content": "hi"}])
print(message.content[0].text)
"""

APP_DEADLINE = 600
TWO_LINES = 'import tracerelay\ntracerelay.init(service_name="two-lines")\n'
# init imports no provider library: the import hook patches each one when the app imports it
NOT_YET = "import sys\nassert 'openai' not in sys.modules and 'anthropic' not in sys.modules\n"


def app_env(upstream: FakeUpstream, tracerelay_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "TRACERELAY_API_KEY": KEY,
        "TRACERELAY_BASE_URL": tracerelay_url,
        "OPENAI_BASE_URL": upstream.url + "/v1",
        "OPENAI_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": upstream.url + "/anthropic",
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }


def run(tmp_path: Path, source: str, upstream: FakeUpstream, tracerelay_url: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(source))
    env = app_env(upstream, tracerelay_url)
    # A deadline for a hung app only: a loaded machine takes tens of seconds to import the providers' SDKs.
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=APP_DEADLINE)


def test_an_app_with_two_added_lines_sends_its_calls_before_exiting(
    tmp_path: Path, upstream: FakeUpstream, server: FakeTracerelay
) -> None:
    done = run(tmp_path, TWO_LINES + NOT_YET + APP, upstream, server.url)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["".join(CHAT_WORDS), "".join(CHAT_WORDS), "Bonjour! How can I help?"]
    traces = sorted(server.traces, key=lambda t: t["timestamp"])
    assert [(t["provider"], t["metadata"]["sdk"]["stream"]) for t in traces] == [
        ("openai", False),
        ("openai", True),
        ("anthropic", False),
    ]
    assert all(t["service_name"] == "two-lines" and t["prompt_tokens"] > 0 for t in traces)


def test_init_after_the_imports_and_the_clients_works_too(
    tmp_path: Path, upstream: FakeUpstream, server: FakeTracerelay
) -> None:
    source = """
    import anthropic
    import openai
    from mistralai.client import Mistral
    import os

    client = openai.OpenAI(max_retries=0)
    import tracerelay
    tracerelay.init(service_name="late")
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    anthropic.Anthropic(max_retries=0).messages.create(
        model="claude-haiku-4-5", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    )
    Mistral(api_key="k", server_url=os.environ["OPENAI_BASE_URL"][:-3]).chat.complete(
        model="mistral-small", messages=[{"role": "user", "content": "hi"}]
    )
    """
    done = run(tmp_path, source, upstream, server.url)
    assert done.returncode == 0, done.stderr
    assert sorted(t["provider"] for t in server.traces) == ["anthropic", "mistral", "openai"]


# The app of the issue: a short script making a few calls and printing them, the SDK added with its
# defaults. On stderr, `STATS` gives the SDK's counters after its flush at exit and `held`, the seconds
# that flush took: atexit runs the last-registered handler first, so `MARK` runs just before
# tracerelay's handler (registered when it is imported) and the STATS line just after it.
SHORT_APP = """
import atexit, json, sys, time
MARK = []
atexit.register(
    lambda: print(
        "STATS",
        json.dumps({**sys.modules["tracerelay"].stats(), "held": time.monotonic() - MARK[0]}),
        file=sys.stderr,
    )
)
import tracerelay
tracerelay.init(service_name="short-script")
atexit.register(lambda: MARK.append(time.monotonic()))
from openai import OpenAI

client = OpenAI(max_retries=0)
for _ in range(CALLS):
    reply = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    print(reply.choices[0].message.content, flush=True)
"""
PLAIN_APP = SHORT_APP[SHORT_APP.index("from openai import OpenAI") :]
SHUTDOWN_TIMEOUT = 2.0  # the default


@dataclass
class Exit:
    lines: list[str]
    stderr: str
    returncode: int
    after_last_line: float  # seconds from the last line of output to the end of the process
    released: float | None  # seconds from the last line of output to the STATS line: the atexit handlers done

    @property
    def teardown(self) -> float:
        """The interpreter's own exit after the atexit handlers (modules freed): the same with or without the SDK."""
        return self.after_last_line - (self.released or 0.0)

    @property
    def stats(self) -> dict[str, Any]:
        (line,) = [line for line in self.stderr.splitlines() if line.startswith("STATS ")]
        return dict(json.loads(line.removeprefix("STATS ")))

    @property
    def sdk_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("tracerelay")]


def run_timed(tmp_path: Path, source: str, upstream: FakeUpstream, tracerelay_url: str) -> Exit:
    """Run the app, reading its output as it comes (each line timed as it arrives), until it ends."""
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(source))
    env = app_env(upstream, tracerelay_url)
    app = subprocess.Popen(
        [sys.executable, str(script)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    output = OutputLines(app)
    try:
        returncode = output.finish(timeout=APP_DEADLINE)
    finally:
        if app.poll() is None:
            app.kill()
    assert output.ended is not None and output.times["stdout"], output.report()
    last = output.times["stdout"][-1]
    stats_at = [t for t, line in zip(output.times["stderr"], output.stderr, strict=True) if line.startswith("STATS ")]
    released = max(0.0, stats_at[0] - last) if stats_at else None  # (stderr's reader may be a little ahead)
    return Exit(output.stdout, "\n".join(output.stderr), returncode, output.ended - last, released)


@pytest.fixture(scope="module")
def plain_exit(tmp_path_factory: pytest.TempPathFactory, upstream: FakeUpstream) -> Exit:
    """The same app without the SDK: its output, and how long the interpreter takes to exit on this machine now."""
    done = run_timed(tmp_path_factory.mktemp("plain"), PLAIN_APP.replace("CALLS", "4"), upstream, "")
    assert done.returncode == 0, done.stderr
    print(f"\nwithout the SDK: exit {done.after_last_line:.2f} s after the last line (the interpreter's own)")
    return done


@pytest.mark.parametrize(
    ("down", "calls"),
    [("refused", 1), ("refused", 4), ("black hole", 4), ("unknown host", 4), ("503", 4)],
)
def test_with_the_service_down_a_short_script_exits_soon_after_its_last_line(
    tmp_path: Path, upstream: FakeUpstream, plain_exit: Exit, down: str, calls: int
) -> None:
    with contextlib.ExitStack() as stack:
        if down == "refused":
            url = f"http://127.0.0.1:{closed_port()}"
        elif down == "black hole":  # accepts the connection, never answers
            url = stack.enter_context(BlackHole()).url
        elif down == "unknown host":
            url = "http://tracerelay.invalid:8000"  # RFC 6761: never resolves
        else:  # every request answered 503, asking for a retry in 30 s
            failing = FakeTracerelay()
            stack.callback(failing.stop)
            failing.script.extend([(503, {"Retry-After": "30"}, {"title": "Unavailable"})] * 20)
            url = failing.url
        done = run_timed(tmp_path, SHORT_APP.replace("CALLS", str(calls)), upstream, url)
    assert done.returncode == 0, done.stderr
    stats = done.stats
    print(
        f"\n{down}, {calls} call(s): exit {done.after_last_line:.2f} s after the last line: the SDK's flush at exit"
        f" {stats['held']:.3f} s, the atexit handlers done at {done.released:.2f} s, the interpreter's own"
        f" teardown {done.teardown:.2f} s",
        end="",
    )
    assert done.lines == plain_exit.lines[:calls]  # the app's own output, unchanged
    assert "Traceback" not in done.stderr
    # The SDK's flush never goes past shutdown_timeout, and the exit is through with the SDK within
    # shutdown_timeout + 1.5 s of the last line. What follows is the interpreter freeing its modules,
    # the same without the SDK (printed above): seconds on a machine under `stress`, not ours to bound.
    assert stats["held"] < SHUTDOWN_TIMEOUT + 0.25, done.stderr
    assert done.released is not None and done.released < SHUTDOWN_TIMEOUT + 1.5, done.stderr
    if down in ("refused", "503"):  # no wait at all: one quick attempt per batch, no backoff
        assert stats["held"] < 0.5, done.stderr
    assert (stats["failed"], stats["sent"], stats["queued"]) == (calls, 0, 0), done.stderr
    (line,) = done.sdk_lines  # one line about it
    assert f"{calls} trace(s) not sent at exit" in line, line
