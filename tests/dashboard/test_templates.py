"""Template source rules Django does not check itself."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted(p for p in ROOT.glob("**/templates/**/*.html") if ".venv" not in p.parts)


def test_there_are_templates_to_check():
    assert len(TEMPLATES) > 20


def test_one_line_comments_close_on_their_line():
    """``{# … #}`` ends on its own line; a longer one shows on the page as text (use
    ``{% comment %}``)."""
    unclosed = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in TEMPLATES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"\{#(?!.*#\})", line)
    ]
    assert unclosed == []
