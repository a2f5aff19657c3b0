"""The `tracerelay` CLI driven end to end against a running server (pytest-django's live server).

In-process through `tracerelay.cli.main` (real HTTP to the live server, real credentials file), and
`traces tail` as a real subprocess stopped with Ctrl-C (SIGINT), which must exit 0.
"""

from __future__ import annotations

import io
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tracerelay.cli import main

from accounts.models import ApiKey, Membership, Role, Team, UserToken

from .output import OutputLines

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "correct horse battery staple"
WAIT = 120  # seconds: the deadline of a wait for the live server or the tail process, never reached when all is well


class Cli:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], home: Path, url: str):
        self.monkeypatch, self.capsys, self.home, self.url = monkeypatch, capsys, home, url
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
        monkeypatch.setenv("TRACERELAY_BASE_URL", url)
        monkeypatch.delenv("TRACERELAY_TEAM", raising=False)

    def __call__(self, *argv: str, stdin: str = "") -> tuple[int, str, str]:
        self.monkeypatch.setenv("XDG_CONFIG_HOME", str(self.home))
        self.monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        self.capsys.readouterr()
        code = main(list(argv))
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *argv: str, stdin: str = "") -> Any:
        code, out, err = self("--json", *argv, stdin=stdin)
        assert code == 0, (argv, out, err)
        return json.loads(out)

    @property
    def credentials(self) -> Path:
        return self.home / "tracerelay" / "credentials.json"


@pytest.fixture
def cli(monkeypatch, capsys, tmp_path, live_server) -> Cli:
    return Cli(monkeypatch, capsys, tmp_path / "alice", live_server.url)


def http(method: str, url: str, token: str, body: Any = None) -> int:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"Bearer {token}"})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_signup_keys_rules_and_logout(cli: Cli, tmp_path: Path) -> None:
    signed = cli.json(
        "signup", "--email", "Alice@example.com", "--password-stdin", "--team-name", "acme", stdin=PASSWORD + "\n"
    )
    assert signed["user"]["email"] == "alice@example.com"
    assert [(t["name"], t["role"]) for t in signed["teams"]] == [("acme", "owner")]
    team = Team.objects.get(name="acme")
    assert signed["team_id"] == team.pk and "token" not in signed

    # the credentials: a token (never the password), readable by this user only
    assert stat.S_IMODE(cli.credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(cli.credentials.parent.stat().st_mode) == 0o700
    stored = json.loads(cli.credentials.read_text())
    assert PASSWORD not in cli.credentials.read_text() and stored["token"].startswith("tru_")
    assert stored["base_url"] == cli.url and stored["team_id"] == team.pk

    assert cli.json("whoami")["user"]["email"] == "alice@example.com"
    code, out, _ = cli("whoami")
    assert code == 0 and "alice@example.com" in out and "acme" in out
    assert cli.json("teams")["data"][0]["id"] == team.pk

    # keys: created (shown once), listed (never in full), revoked by prefix → refused by the API
    created = cli.json("keys", "create", "--environment", "development", "--name", "laptop")
    raw = created["key"]
    assert raw.startswith("tr_dev_") and created["api_key"]["environment"] == "development"
    code, out, err = cli("keys", "create", "--environment", "ci")
    assert code == 0 and out.strip().startswith("tr_ci_") and len(out.strip().splitlines()) == 1
    assert "only time" in err
    ci_raw = out.strip()
    listed = cli.json("keys", "list")
    assert {k["environment"] for k in listed["data"]} == {"development", "ci"}
    code, out, _ = cli("keys", "list")
    assert code == 0 and raw not in out and ci_raw not in out and created["api_key"]["prefix"] in out
    assert http("GET", cli.url + "/api/v1/traces", raw) == 200
    code, out, _ = cli("keys", "revoke", created["api_key"]["prefix"] + "…")
    assert code == 0 and "Revoked" in out
    assert http("GET", cli.url + "/api/v1/traces", raw) == 401
    assert ApiKey.objects.get(prefix=created["api_key"]["prefix"]).revoked_at is not None
    assert http("GET", cli.url + "/api/v1/traces", ci_raw) == 200

    # rules: apply a JSON file, read them back; what `rules get --json` printed applies as it is
    rules = tmp_path / "rules.json"
    rules.write_text(
        json.dumps(
            {"rules": [{"name": "drop errors", "condition": "status == 'error'", "destinations": [], "stop": True}]}
        )
    )
    code, out, _ = cli("rules", "apply", "-f", str(rules))
    assert code == 0 and "Applied 1 rule" in out
    got = cli.json("rules", "get")
    assert [r["name"] for r in got["rules"]] == ["drop errors"] and got["updated_by"] == "user:alice@example.com"
    (tmp_path / "again.json").write_text(json.dumps(got))
    assert cli.json("rules", "apply", "-f", str(tmp_path / "again.json"))["version"] == got["version"] + 1
    code, out, _ = cli("rules", "get")
    assert code == 0 and "drop errors" in out and "status == 'error'" in out

    # logout: the token is revoked on the server and the file is gone
    token = stored["token"]
    assert http("GET", cli.url + "/api/v1/auth/me", token) == 200
    assert cli("logout")[0] == 0
    assert not cli.credentials.exists()
    assert http("GET", cli.url + "/api/v1/auth/me", token) == 401
    assert UserToken.objects.get().revoked_at is not None
    code, _, err = cli("whoami")
    assert code == 3 and "Not logged in" in err
    assert cli("logout")[0] == 0  # nothing to do


def test_rules_from_yaml_or_a_clear_error_without_pyyaml(cli: Cli, tmp_path: Path, monkeypatch) -> None:
    cli("signup", "--email", "y@example.com", "--password-stdin", stdin=PASSWORD)
    path = tmp_path / "rules.yaml"
    path.write_text("rules:\n  - name: everything\n    destinations: []\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    code, _, err = cli("rules", "apply", "-f", str(path))
    assert code == 2 and "PyYAML" in err
    monkeypatch.delitem(sys.modules, "yaml")
    pytest.importorskip("yaml")
    assert cli.json("rules", "apply", "-f", str(path))["rules"][0]["name"] == "everything"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_errors_have_clear_messages_and_their_exit_codes(cli: Cli, tmp_path: Path, monkeypatch, capsys) -> None:
    code, _, err = cli("whoami")
    assert code == 3 and "Not logged in" in err
    code, out, err = cli("signup", "--email", "x@example.com", "--password-stdin", stdin="short\n")
    assert code == 6 and "password" in err and out == ""
    code, out, _ = cli("--json", "signup", "--email", "x@example.com", "--password-stdin", stdin="short\n")
    problem = json.loads(out)
    assert code == 6 and problem["exit_code"] == 6 and "password" in problem["problem"]["errors"]
    assert cli("signup", "--email", "x@example.com")[0] == 2  # no terminal to prompt on, no --password-stdin
    cli("signup", "--email", "x@example.com", "--password-stdin", "--team-name", "xteam", stdin=PASSWORD)
    code, _, err = cli("login", "--email", "x@example.com", "--password-stdin", stdin="wrong\n")
    assert code == 3 and "do not match" in err
    code, _, err = cli("--base-url", f"http://127.0.0.1:{_closed_port()}", "whoami")
    assert code == 3 and "Logged in to" in err  # the token is never sent to another server
    code, _, err = cli(
        "--base-url",
        f"http://127.0.0.1:{_closed_port()}",
        "login",
        "--email",
        "x@example.com",
        "--password-stdin",
        stdin=PASSWORD,
    )
    assert code == 7 and "Cannot reach" in err
    assert cli("--base-url", "ftp://example.com", "whoami")[0] == 2

    code, _, err = cli("keys", "revoke", "tr_prod_nothere")
    assert code == 5 and "No key" in err
    code, _, err = cli("keys", "revoke", "999999")
    assert code == 5
    code, _, err = cli("keys", "create", "--environment", "staging")
    assert code == 2  # argparse: not a choice
    code, _, err = cli("rules", "apply", "-f", str(tmp_path / "missing.json"))
    assert code == 2 and "Cannot read" in err
    (tmp_path / "bad.json").write_text(
        '{"rules": [{"name": "x", "condition": "status ==", "destinations": ["nowhere"]}]}'
    )
    code, _, err = cli("rules", "apply", "-f", str(tmp_path / "bad.json"))
    assert code == 6 and "rules[0].destinations[0]: Unknown destination" in err
    (tmp_path / "broken.json").write_text("{")
    assert cli("rules", "apply", "-f", str(tmp_path / "broken.json"))[0] == 2
    assert cli("--team", "no such team", "keys", "list")[0] == 5
    other = Team.objects.create(name="not mine")
    code, _, err = cli("--team", str(other.pk), "rules", "get")
    assert code == 4 and "not a member" in err

    # a viewer of the team: may read keys, not create them
    viewer = Cli(monkeypatch, capsys, tmp_path / "viewer", cli.url)
    viewer("signup", "--email", "v@example.com", "--password-stdin", stdin=PASSWORD)
    team = Team.objects.get(name="xteam")
    Membership.objects.create(
        user=UserToken.objects.filter(user__username="v@example.com").get().user, team=team, role=Role.VIEWER
    )
    assert viewer("--team", "xteam", "keys", "list")[0] == 0
    code, _, err = viewer("--team", str(team.pk), "keys", "create", "--environment", "ci")
    assert code == 4 and "viewer" in err
    code, _, err = viewer("--team", "xteam", "rules", "apply", "-f", str(tmp_path / "bad.json"))
    assert code == 4 and "rules:write" in err


def _post_trace(url: str, key: str, **fields: Any) -> None:
    assert http("POST", url + "/api/v1/traces", key, {"model": "gpt-4o", "provider": "openai", **fields}) == 201


def test_traces_tail_sees_new_traces_and_ctrl_c_exits_0(cli: Cli, tmp_path: Path) -> None:
    cli("signup", "--email", "t@example.com", "--password-stdin", stdin=PASSWORD)
    key = cli.json("keys", "create", "--environment", "production")["key"]
    _post_trace(cli.url, key, service_name="shop", model="before-the-tail")
    env = {**os.environ, "XDG_CONFIG_HOME": str(cli.home), "TRACERELAY_BASE_URL": cli.url}
    tail = subprocess.Popen(
        [sys.executable, "-m", "tracerelay.cli", "traces", "tail", "--json", "--service", "shop", "--interval", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    output = OutputLines(tail)
    try:
        # Each wait is for what the process says, with a deadline far above what a busy machine needs.
        output.wait_for("stderr", lambda line: "Tailing traces" in line, timeout=WAIT)  # ready: the cursor is taken
        _post_trace(cli.url, key, service_name="elsewhere", model="other-service")
        _post_trace(cli.url, key, service_name="shop", model="gpt-4o-mini", status="error")
        seen = json.loads(output.wait_for("stdout", lambda line: True, timeout=WAIT))
        assert (seen["model"], seen["service_name"], seen["status"]) == ("gpt-4o-mini", "shop", "error")
        tail.send_signal(signal.SIGINT)
        assert output.finish(timeout=WAIT) == 0, output.report()
    finally:
        if tail.poll() is None:
            tail.kill()
    # Read to the end: pure JSON lines, nothing else, and the trace from before the tail was not printed.
    assert len(output.stdout) == 1, output.report()

    # text mode, with the latest one first and a count to stop at
    code, out, _ = cli("traces", "tail", "--service", "shop", "--last", "1", "--count", "1")
    assert code == 0 and "gpt-4o-mini" in out and "error" in out


def test_an_unreadable_credentials_file_asks_for_a_new_login(cli: Cli) -> None:
    cli.credentials.parent.mkdir(parents=True)
    cli.credentials.write_text("{not json")
    code, _, err = cli("whoami")
    assert code == 3 and "Log in again" in err
    assert cli("signup", "--email", "z@example.com", "--password-stdin", stdin=PASSWORD)[0] == 0
    assert cli.json("whoami")["user"]["email"] == "z@example.com"


def test_score_posts_a_number_a_boolean_or_a_category(cli: Cli) -> None:
    from traces.models import Score

    from ..factories import TraceFactory

    cli.json("signup", "--email", "sc@example.com", "--password-stdin", "--team-name", "scorers", stdin=PASSWORD + "\n")
    TraceFactory(team=Team.objects.get(name="scorers"), trace_id="trc-cli-score")

    number = cli.json("score", "trc-cli-score", "helpfulness", "0.75", "--comment", "ok")
    assert (number["value"], number["data_type"], number["source"], number["comment"]) == (0.75, "numeric", "cli", "ok")
    assert cli.json("score", "trc-cli-score", "thumbs", "false")["data_type"] == "boolean"
    code, out, _ = cli("score", "trc-cli-score", "topic", "billing")
    assert code == 0 and "categorical" in out
    assert sorted(Score.objects.values_list("name", flat=True)) == ["helpfulness", "thumbs", "topic"]

    code, _, err = cli("score", "no-such-trace", "thumbs", "true")
    assert code == 5 and "no-such-trace" in err
    code, _, err = cli("score", "trc-cli-score", "bad name", "1")
    assert code == 6 and "name" in err


def test_score_takes_a_run_with_dash_dash_run(cli: Cli) -> None:
    from ..factories import TraceFactory

    cli.json("signup", "--email", "sr@example.com", "--password-stdin", "--team-name", "runners", stdin=PASSWORD + "\n")
    team = Team.objects.get(name="runners")
    TraceFactory(team=team, run_id="run-cli", trace_id="run-cli-root", kind="chain")
    TraceFactory(team=team, run_id="run-cli", trace_id="run-cli-llm", parent_id="run-cli-root")

    scored = cli.json("score", "--run", "run-cli", "helpfulness", "-0.5")
    assert (scored["trace_id"], scored["value"], scored["source"]) == ("run-cli-root", -0.5, "cli")
    code, _, err = cli("score", "--run", "no-such-run", "thumbs", "true")
    assert code == 5 and "no-such-run" in err
    code, _, err = cli("score", "--run", "run-cli", "trc-x", "thumbs", "true")
    assert code == 2 and "--run RUN_ID NAME VALUE" in err
    code, _, err = cli("score", "thumbs", "true")
    assert code == 2 and "TRACE_ID NAME VALUE" in err
