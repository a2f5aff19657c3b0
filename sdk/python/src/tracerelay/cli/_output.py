"""Printing: tables and sentences for people, or pure JSON on stdout with --json (messages go to stderr)."""

from __future__ import annotations

import json
import sys
from typing import Any


class Output:
    def __init__(self, as_json: bool) -> None:
        self.as_json = as_json

    def json(self, value: Any) -> bool:
        """Print ``value`` as JSON when --json; True when it did (the caller then prints nothing else)."""
        if self.as_json:
            sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
            sys.stdout.flush()
        return self.as_json

    def line(self, text: str = "") -> None:
        print(text, flush=True)

    def note(self, text: str) -> None:
        """A remark beside the result (stderr, so stdout stays the result alone)."""
        print(text, file=sys.stderr, flush=True)

    def table(self, header: list[str], rows: list[list[str]]) -> None:
        widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip(), flush=True)
