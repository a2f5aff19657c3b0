"""`tracerelay`: the command-line tool (docs/cli.md).

    tracerelay signup --email me@example.com
    tracerelay keys create --environment development
    tracerelay traces tail --model 'gpt-4o*'

Exit codes are listed in `_session.py` and docs/cli.md; `--json` prints pure JSON on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .. import __version__
from . import _account, _team
from ._output import Output
from ._session import INTERRUPTED, USAGE, CliError, Session

Handler = Callable[[Session, argparse.Namespace, Output], int]


def _common() -> argparse.ArgumentParser:
    """Options every command takes, before or after its name. SUPPRESS: a subcommand's parser must not
    overwrite what the main one read (`main` supplies the defaults); the action objects are shared."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--base-url",
        default=argparse.SUPPRESS,
        help="the server (default: TRACERELAY_BASE_URL, else the one logged in to)",
    )
    common.add_argument(
        "--team", default=argparse.SUPPRESS, help="team id or name (default: TRACERELAY_TEAM, else the stored one)"
    )
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print pure JSON on stdout")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="tracerelay",
        description="tracerelay from the command line: account, API keys, routing rules, live traces.",
        parents=[common],
        epilog="Exit codes: 0 ok, 1 server error, 2 usage, 3 not logged in / refused credentials, 4 forbidden, "
        "5 not found, 6 invalid input, 7 server unreachable, 8 throttled, 130 interrupted. See docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"tracerelay {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, handler: Handler, help: str, parent: Any = commands) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = parent.add_parser(name, parents=[common], help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    for name, handler, text in (
        ("signup", _account.signup, "make an account (and its team), and log in"),
        ("login", _account.login, "log in: store a user token (never the password)"),
    ):
        sub = command(name, handler, text)
        sub.add_argument("--email", required=True)
        sub.add_argument("--password-stdin", action="store_true", help="read the password from stdin's first line")
        if name == "signup":
            sub.add_argument("--team-name", help="the new team's name (default: <name>'s team)")
    logout = command("logout", _account.logout, "revoke the stored token on the server and delete it")
    logout.add_argument("--force", action="store_true", help="forget the token locally even when the server is down")
    command("whoami", _account.whoami, "who the stored token is, and your teams")
    teams = command("teams", _account.teams, "list your teams (and choose the one commands act in)")
    teams.add_argument("--use", metavar="TEAM", help="make this team (id or name) the default one")

    keys = command("keys", _no_subcommand, "a team's API keys").add_subparsers(dest="keys_command", metavar="ACTION")
    create = command("create", _team.keys_create, "create a key (shown once)", keys)
    create.add_argument("--environment", required=True, choices=["production", "development", "ci"])
    create.add_argument("--name", default="", help="a label for the key")
    command("list", _team.keys_list, "list keys (prefixes only, never a full key)", keys)
    revoke = command("revoke", _team.keys_revoke, "revoke a key", keys)
    revoke.add_argument("key", metavar="ID_OR_PREFIX", help="the key's id or its prefix (as keys list shows it)")

    rules = command("rules", _no_subcommand, "the team's routing rules").add_subparsers(
        dest="rules_command", metavar="ACTION"
    )
    get = command("get", _team.rules_get, "show the rule set", rules)
    get.add_argument("--raw", action="store_true", help="print the rule set as indented JSON (to edit and apply)")
    apply = command("apply", _team.rules_apply, "replace the rule set with a file's", rules)
    apply.add_argument("-f", "--file", required=True, help="rules.json, rules.yaml (needs PyYAML) or - for stdin")

    traces = command("traces", _no_subcommand, "the team's traces").add_subparsers(
        dest="traces_command", metavar="ACTION"
    )
    tail = command("tail", _team.traces_tail, "print traces as they arrive (Ctrl-C stops, exit 0)", traces)
    tail.add_argument("--model", help="exact model, or a prefix ending in * ('gpt-4*')")
    tail.add_argument("--provider")
    tail.add_argument("--status", help="success, error, rate_limited (comma-separated for several)")
    tail.add_argument("--service", help="service_name, exact")
    tail.add_argument("--environment")
    tail.add_argument("--session", help="session_id")
    tail.add_argument("--user", help="user_id (the end user)")
    tail.add_argument("--tag", action="append", help="carries this tag (repeat for all of several)")
    tail.add_argument("--interval", type=_positive_float, default=2.0, help="seconds between polls (default 2)")
    tail.add_argument("--last", type=_count, default=0, help="first print the N latest traces (default 0)")
    tail.add_argument("--count", type=_count, default=0, help="stop after N traces (default: never)")
    score = command("score", _team.score_post, "score a trace or a run: a number, true/false or a category")
    score.add_argument(
        "target",
        nargs="+",
        metavar="[TRACE_ID] NAME VALUE",
        help="the trace (left out with --run), the score's name (helpfulness, thumbs, ...) and its value: "
        "a number (0.8), true/false, or any other text as a category",
    )
    score.add_argument("--run", metavar="RUN_ID", help="score this run (its root span) instead of a trace")
    score.add_argument("--comment", help="why")
    score.add_argument("--source", help="who scored (default: cli)")
    return parser


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.05 <= value <= 3600:
        raise argparse.ArgumentTypeError("must be between 0.05 and 3600 seconds")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) > 500:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 500, not {text!r}")
    return int(text)


def _no_subcommand(session: Session, args: argparse.Namespace, out: Output) -> int:
    raise CliError(f"tracerelay {args.command}: name an action (tracerelay {args.command} --help).", USAGE)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit:  # argparse: --help, --version (0) or a bad command line (2), already printed
        return exit.code if isinstance(exit.code, int) else USAGE
    out = Output(bool(getattr(args, "json", False)))
    try:
        session = Session(getattr(args, "base_url", None), getattr(args, "team", None))
        return int(args.handler(session, args, out))
    except CliError as error:
        if out.as_json:
            sys.stdout.write(
                json.dumps({"error": error.message, "exit_code": error.code, "problem": error.problem}) + "\n"
            )
        print(f"tracerelay: {error.message}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        print("", file=sys.stderr)
        return INTERRUPTED


def run() -> None:
    """The console script."""
    sys.exit(main())
