"""keys, rules, traces tail: a team's things, with the user token and the chosen team (X-Team)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ._output import Output
from ._session import NOT_FOUND, USAGE, CliError, Session

# --- keys ------------------------------------------------------------------------------------------------


def _keys(session: Session) -> tuple[int, list[dict[str, Any]]]:
    team = session.team_id()
    return team, session.call("GET", f"/api/v1/teams/{team}/keys").body["data"]


def keys_create(session: Session, args: argparse.Namespace, out: Output) -> int:
    team = session.team_id()
    body = {"environment": args.environment, "name": args.name or ""}
    answer = session.call("POST", f"/api/v1/teams/{team}/keys", body).body
    if out.json(answer):
        return 0
    key = answer["api_key"]
    out.note(f"Created {key['environment']} key {key['id']} ({key['prefix']}…) in team {team}.")
    out.note("This is the only time the full key is shown: store it now (e.g. TRACERELAY_API_KEY).")
    out.line(answer["key"])
    return 0


def keys_list(session: Session, args: argparse.Namespace, out: Output) -> int:
    team, rows = _keys(session)
    if out.json({"team_id": team, "data": rows}):
        return 0
    if not rows:
        out.line(f"No API keys in team {team}: tracerelay keys create --environment development")
        return 0
    out.table(
        ["ID", "PREFIX", "ENVIRONMENT", "NAME", "STATUS", "CREATED", "LAST USED"],
        [
            [
                str(k["id"]),
                f"{k['prefix']}…",
                k["environment"],
                k["name"] or "-",
                "active" if k["active"] else "revoked",
                (k["created_at"] or "")[:19],
                (k["last_used_at"] or "never")[:19],
            ]
            for k in rows
        ],
    )
    return 0


def keys_revoke(session: Session, args: argparse.Namespace, out: Output) -> int:
    wanted = args.key.strip().rstrip("…").rstrip(".")
    team = session.team_id()
    if wanted.isdigit():
        key_id = int(wanted)
    else:
        _, rows = _keys(session)
        matches = [k for k in rows if k["prefix"].startswith(wanted) or wanted.startswith(k["prefix"])]
        live = [k for k in matches if k["active"]] or matches
        if not live:
            raise CliError(f"No key in team {team} has the prefix {wanted!r} (tracerelay keys list).", NOT_FOUND)
        if len(live) > 1:
            ids = ", ".join(str(k["id"]) for k in live)
            raise CliError(f"{len(live)} keys start with {wanted!r} (ids {ids}): give the id.", USAGE)
        key_id = live[0]["id"]
    key = session.call("DELETE", f"/api/v1/teams/{team}/keys/{key_id}").body
    if not out.json(key):
        out.line(f"Revoked key {key['id']} ({key['prefix']}…): requests with it are refused from now on.")
    return 0


# --- rules -----------------------------------------------------------------------------------------------


def rules_get(session: Session, args: argparse.Namespace, out: Output) -> int:
    rule_set = session.call("GET", "/api/v1/routing/rules", team=True).body
    if out.json(rule_set) or args.raw:
        if args.raw:
            out.line(json.dumps(rule_set, indent=2, ensure_ascii=False))
        return 0
    rules = rule_set.get("rules", [])
    out.line(f"Rule set version {rule_set.get('version')}, {len(rules)} rule{'s' if len(rules) != 1 else ''}.")
    if rules:
        out.table(
            ["PRIORITY", "NAME", "ENABLED", "CONDITION", "DESTINATIONS"],
            [
                [
                    str(r.get("priority")),
                    r.get("name", ""),
                    "yes" if r.get("enabled") else "no",
                    _condition_text(r),
                    ", ".join(_destination_text(d) for d in r.get("destinations") or []) or "(drop)",
                ]
                for r in rules
            ],
        )
    return 0


def _condition_text(rule: dict[str, Any]) -> str:
    value = rule.get("condition") or rule.get("conditions")
    if value is None:
        return "(every trace)"
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 60 else text[:59] + "…"


def _destination_text(d: Any) -> str:
    return d if isinstance(d, str) else str(d.get("name") or d.get("integration") or d)


def _read_rules(path: str) -> Any:
    source = sys.stdin if path == "-" else None
    try:
        text = source.read() if source is not None else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"Cannot read {path}: {exc.strerror or exc}.", USAGE) from None
    if path.lower().endswith((".yaml", ".yml")):
        try:
            import yaml  # type: ignore[import-untyped]
        except ImportError:
            raise CliError(
                "Reading YAML needs the PyYAML package (pip install pyyaml); or give the rules as JSON.", USAGE
            ) from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise CliError(f"{path} is not valid YAML: {exc}", USAGE) from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise CliError(f"{path} is not valid JSON: {exc}", USAGE) from None


def rules_apply(session: Session, args: argparse.Namespace, out: Output) -> int:
    document = _read_rules(args.file)
    if not isinstance(document, dict | list):
        raise CliError(f'{args.file} must hold {{"rules": [...]}} or a list of rules.', USAGE)
    if isinstance(document, dict):  # what `rules get --json` printed: keep the rules, drop what is output-only
        document = {k: v for k, v in document.items() if k not in ("version", "updated_at", "updated_by")}
        if isinstance(document.get("rules"), list):
            document["rules"] = [_input_rule(r) for r in document["rules"]]
    else:
        document = [_input_rule(r) for r in document]
    answer = session.call("PUT", "/api/v1/routing/rules", document, team=True).body
    if not out.json(answer):
        count = len(answer.get("rules", []))
        out.line(f"Applied {count} rule{'s' if count != 1 else ''}: rule set version {answer.get('version')}.")
    return 0


def _input_rule(rule: Any) -> Any:
    return {k: v for k, v in rule.items() if k not in ("created_at", "updated_at")} if isinstance(rule, dict) else rule


# --- traces tail -------------------------------------------------------------------------------------------


def _filters(args: argparse.Namespace) -> list[tuple[str, str]]:
    query = []
    for name, value in (
        ("model", args.model),
        ("provider", args.provider),
        ("status", args.status),
        ("service_name", args.service),
        ("environment", args.environment),
        ("session_id", args.session),
        ("user_id", args.user),
    ):
        if value:
            query.append((name, value))
    query.extend(("tag", tag) for tag in args.tag or ())
    return query


def _trace_line(t: dict[str, Any]) -> str:
    cost = t.get("cost")
    tokens = f"{t.get('prompt_tokens') or 0}→{t.get('completion_tokens') or 0} tok"
    parts = [
        (t.get("timestamp") or "")[:23],
        t.get("status") or "",
        f"{t.get('provider') or '-'}/{t.get('model') or '-'}",
        f"{t.get('latency_ms')}ms" if t.get("latency_ms") is not None else "-",
        tokens,
        # every digit the API gives: $0.0000035, not $0.000000
        f"${Decimal(str(cost)).normalize():f}" if cost is not None else "unpriced",
        t.get("service_name") or "-",
        t.get("id") or t.get("trace_id") or "",
    ]
    return "  ".join(str(p) for p in parts)


def traces_tail(session: Session, args: argparse.Namespace, out: Output) -> int:
    """Print traces as they arrive (oldest first), polling the feed with `after`; Ctrl-C ends it with 0."""
    query = _filters(args)
    printed = 0
    try:
        first = session.call("GET", "/api/v1/traces", query=[*query, ("limit", str(max(args.last, 1)))], team=True)
        cursor = first.body["newest_cursor"]
        backlog = first.body["data"][: args.last] if args.last else []
        # On stderr, with --json too (stdout stays JSON lines): from here on, new traces are printed.
        out.note(f"Tailing traces of team {session.team_id()} every {args.interval:g}s (Ctrl-C to stop).")
        while True:
            for trace in reversed(backlog):
                if not out.json(trace):
                    out.line(_trace_line(trace))
                printed += 1
                if args.count and printed >= args.count:
                    return 0
            time.sleep(args.interval)
            page = session.call("GET", "/api/v1/traces", query=[*query, ("after", cursor), ("limit", "500")], team=True)
            backlog = page.body["data"]
            cursor = page.body["newest_cursor"]
    except KeyboardInterrupt:
        return 0


def _score_value(text: str) -> float | bool | str:
    """``true``/``false`` → a boolean, a finite number → a number, anything else → a category."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    try:
        number = float(text)
    except ValueError:
        return text
    if number != number or number in (float("inf"), float("-inf")):
        return text
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def score_post(session: Session, args: argparse.Namespace, out: Output) -> int:
    if args.run is not None:
        if len(args.target) != 2:
            raise CliError("tracerelay score --run RUN_ID NAME VALUE: give the name and the value only.", USAGE)
        name, value = args.target
        path = f"/api/v1/runs/{quote(args.run, safe='')}/scores"
    else:
        if len(args.target) != 3:
            raise CliError("tracerelay score TRACE_ID NAME VALUE (or --run RUN_ID NAME VALUE).", USAGE)
        trace_id, name, value = args.target
        path = f"/api/v1/traces/{quote(trace_id, safe='')}/scores"
    body: dict[str, Any] = {"name": name, "value": _score_value(value), "source": args.source or "cli"}
    if args.comment is not None:
        body["comment"] = args.comment
    score = session.call("POST", path, body, team=True).body
    if out.json(score):
        return 0
    out.line(
        f"Scored {score.get('trace_id')}: {score.get('name')} = {json.dumps(score.get('value'))} "
        f"({score.get('data_type')})."
    )
    return 0
