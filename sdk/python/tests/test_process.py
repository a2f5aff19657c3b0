"""Whole applications in their own interpreter: two added lines, init before or after the imports, exit.

These run `python` on a script, so what is checked is what a user gets: the import hook on a clean
interpreter, the flush at exit, and an app that behaves the same with the service down.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from fake_tracerelay import FakeTracerelay
from fake_transport import KEY

from tests.proxy.fake_upstream import CHAT_WORDS, FakeUpstream

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

TWO_LINES = 'import tracerelay\ntracerelay.init(service_name="two-lines")\n'
# init imports no provider library: the import hook patches each one when the app imports it
NOT_YET = "import sys\nassert 'openai' not in sys.modules and 'anthropic' not in sys.modules\n"


def run(tmp_path: Path, source: str, upstream: FakeUpstream, tracerelay_url: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "app.py"
    script.write_text(textwrap.dedent(source))
    env = {
        **os.environ,
        "TRACERELAY_API_KEY": KEY,
        "TRACERELAY_BASE_URL": tracerelay_url,
        "OPENAI_BASE_URL": upstream.url + "/v1",
        "OPENAI_API_KEY": "sk-test",
        "ANTHROPIC_BASE_URL": upstream.url + "/anthropic",
        "ANTHROPIC_API_KEY": "sk-ant-test",
    }
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)


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


def test_with_the_service_down_the_app_gives_the_same_output_and_exits_in_bounded_time(
    tmp_path: Path, upstream: FakeUpstream
) -> None:
    # atexit runs handlers last-registered first: `mark` runs just before tracerelay's flush at exit,
    # `report` just after it, so the app itself reports how long that flush held the exit.
    timed = (
        "import atexit, sys, time\n"
        "marks = []\n"
        "atexit.register(lambda: print('exit flush', time.monotonic() - marks[0], file=sys.stderr))\n"
        + TWO_LINES.replace(")", ", shutdown_timeout=1)")
        + "atexit.register(lambda: marks.append(time.monotonic()))\n"
    )
    plain = run(tmp_path, APP, upstream, "http://127.0.0.1:9")
    down = run(tmp_path, timed + APP, upstream, "http://127.0.0.1:9")
    assert down.returncode == plain.returncode == 0
    assert down.stdout == plain.stdout
    assert "Traceback" not in down.stderr
    held = float(down.stderr.split("exit flush ")[1].split()[0])
    assert held < 1 + 2  # shutdown_timeout, and scheduling slack on a loaded machine
