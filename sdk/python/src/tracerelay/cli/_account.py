"""signup, login, logout, whoami, teams: the person's account (a user token, never the password, is stored)."""

from __future__ import annotations

import argparse
import getpass
import socket
import sys
from typing import Any

from ._output import Output
from ._session import (
    NOT_LOGGED_IN,
    UNREACHABLE,
    USAGE,
    CliError,
    Session,
    credentials_path,
    delete_credentials,
    save_credentials,
)


def read_password(args: argparse.Namespace, *, confirm: bool) -> str:
    if args.password_stdin:
        line = sys.stdin.readline()
        password = line[:-1] if line.endswith("\n") else line
        if password.endswith("\r"):
            password = password[:-1]
        if not password:
            raise CliError("--password-stdin read an empty password.", USAGE)
        return password
    if not sys.stdin.isatty():
        raise CliError("No terminal to ask for the password on: pipe it in with --password-stdin.", USAGE)
    try:
        password = getpass.getpass("Password: ")
        if confirm and getpass.getpass("Password (again): ") != password:
            raise CliError("The passwords differ.", USAGE)
    except EOFError:
        raise CliError("No password given.", USAGE) from None
    if not password:
        raise CliError("No password given.", USAGE)
    return password


def _token_name() -> str:
    return f"cli on {socket.gethostname()}"[:100]


def _store(session: Session, answer: dict[str, Any]) -> dict[str, Any]:
    teams = answer.get("teams") or []
    previous = (session.credentials or {}).get("team_id")
    keep = previous if any(t["id"] == previous for t in teams) else None
    team_id = keep if keep is not None else (teams[0]["id"] if teams else None)
    path = save_credentials(
        {
            "base_url": session.base_url,
            "token": answer["token"],
            "email": answer["user"]["email"],
            "team_id": team_id,
            "expires_at": answer["token_info"]["expires_at"],
        }
    )
    return {
        "user": answer["user"],
        "teams": teams,
        "team_id": team_id,
        "expires_at": answer["token_info"]["expires_at"],
        "credentials": str(path),
    }


def _report_login(out: Output, verb: str, result: dict[str, Any], base_url: str) -> None:
    team = next((t for t in result["teams"] if t["id"] == result["team_id"]), None)
    out.line(f"{verb} as {result['user']['email']} at {base_url}.")
    if team is not None:
        out.line(f"Team: {team['name']} (id {team['id']}, {team['role']}).")
    else:
        out.line("You are in no team yet.")
    out.line(f"Credentials saved to {result['credentials']} (expire {result['expires_at']}).")


def signup(session: Session, args: argparse.Namespace, out: Output) -> int:
    password = read_password(args, confirm=True)
    body = {"email": args.email, "password": password, "token_name": _token_name()}
    if args.team_name:
        body["team_name"] = args.team_name
    answer = session.call("POST", "/api/v1/auth/signup", body, auth=False).body
    result = _store(session, answer)
    if not out.json(result):
        _report_login(out, "Signed up", result, session.base_url)
    return 0


def login(session: Session, args: argparse.Namespace, out: Output) -> int:
    password = read_password(args, confirm=False)
    body = {"email": args.email, "password": password, "token_name": _token_name()}
    answer = session.call("POST", "/api/v1/auth/login", body, auth=False).body
    result = _store(session, answer)
    if not out.json(result):
        _report_login(out, "Logged in", result, session.base_url)
    return 0


def logout(session: Session, args: argparse.Namespace, out: Output) -> int:
    if session.credentials is None:
        if not out.json({"logged_out": False, "reason": "not logged in"}):
            out.line("Not logged in: nothing to do.")
        return 0
    stored_url = str(session.credentials.get("base_url", ""))
    session.base_url = stored_url.rstrip("/") or session.base_url  # revoke where the token came from
    revoked = True
    try:
        session.call("POST", "/api/v1/auth/logout", ok=(204,))
    except CliError as error:
        if error.code == UNREACHABLE and not args.force:
            raise CliError(
                f"{error.message} The token is still valid there: retry, or --force to forget it locally anyway.",
                UNREACHABLE,
            ) from None
        if error.code not in (NOT_LOGGED_IN, UNREACHABLE):
            raise
        revoked = False  # expired or revoked already (401), or --force with the server down
    delete_credentials()
    if not out.json({"logged_out": True, "revoked": revoked, "credentials": str(credentials_path())}):
        out.line(
            f"Logged out{'' if revoked else ' (the server had no live token to revoke)'}; removed {credentials_path()}."
        )
    return 0


def whoami(session: Session, args: argparse.Namespace, out: Output) -> int:
    me = session.call("GET", "/api/v1/auth/me").body
    current = (session.credentials or {}).get("team_id")
    me["base_url"] = session.base_url
    me["team_id"] = current
    if out.json(me):
        return 0
    out.line(f"{me['user']['email']} (user {me['user']['id']}) at {session.base_url}")
    out.line(f"Token {me['token']['prefix']}… expires {me['token']['expires_at']}")
    _teams_table(out, me["teams"], current)
    return 0


def _teams_table(out: Output, teams: list[dict[str, Any]], current: Any) -> None:
    if not teams:
        out.line("In no team.")
        return
    out.table(
        ["", "ID", "NAME", "ROLE"],
        [["*" if t["id"] == current else "", str(t["id"]), t["name"], t["role"]] for t in teams],
    )


def teams(session: Session, args: argparse.Namespace, out: Output) -> int:
    rows = session.call("GET", "/api/v1/teams").body["data"]
    current = (session.credentials or {}).get("team_id")
    if args.use is not None:
        session.team = args.use
        chosen = session.team_id()
        if not any(t["id"] == chosen for t in rows):
            raise CliError(f"You are in no team {args.use!r} (the list: tracerelay teams).", 5)
        assert session.credentials is not None  # call() needed the token
        save_credentials({**session.credentials, "team_id": chosen})
        current = chosen
    if not out.json({"data": rows, "team_id": current}):
        _teams_table(out, rows, current)
        if args.use is not None:
            out.line(f"Now working in team {current}.")
    return 0
