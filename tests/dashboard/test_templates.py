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


def test_a_title_block_holds_a_title_only():
    """``{% block title %}`` closes on its own line and holds no markup: an unclosed one swallowed the
    page's delete-team section into `/settings/team`'s `<title>`, where it showed as escaped HTML."""
    wrong = []
    for path in TEMPLATES:
        text = path.read_text()
        for match in re.finditer(r"\{% block title %\}", text):
            line = text[match.end() :].split("\n", 1)[0]
            body = line.split("{% endblock %}", 1)[0]
            if "{% endblock %}" not in line or "<" in body:
                wrong.append(f"{path.relative_to(ROOT)}: {line[:80]}")
    assert wrong == []
