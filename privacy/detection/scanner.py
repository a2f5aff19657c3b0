"""`scan(text)`: every PII finding in a text, validated, non-overlapping, in text order."""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Collection, Sequence

from . import checks
from . import patterns as p
from .custom import CustomPattern
from .kinds import CREDIT_CARD, EMAIL, IBAN, IP_ADDRESS, PHONE, SECRET, TIE_ORDER, US_SSN, Finding

_DIGITS = "0123456789"
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_NUMBER_BEFORE = _ALNUM | frozenset("_.-/")
_IPV6_AFTER = _ALNUM | frozenset(":")
_NUMBER_AFTER = _ALNUM | frozenset("_")
_DIGIT_SET = frozenset(_DIGITS)
_SEPARATORS = str.maketrans("", "", " -.()+")
_MAX_NUMBER_CHUNKS = 12
_SHORTEST = 6  # "a@b.co"; every other kind is longer
_PIECE = re.compile(r"[^ ]+")
_PRIORITY = {kind: i for i, kind in enumerate(TIE_ORDER)}
_EXTENSION_START = frozenset(" xXeE")
_SLASHED_AFTER = _ALNUM | frozenset("_/")
_CONTEXT = 32  # characters before a bare number searched for a word calling it a phone number
# Tokens of these issuers are random, so they hold a digit; without one they are slugs or words
# (and Google's and SendGrid's would not pass the prefilter, which has no word for them).
_TYPESET = {0x00A0: " ", 0x202F: " ", 0x2009: " ", 0x2011: "-"}
_NEEDS_A_DIGIT = ("sk-", "sk_", "rk_", "hf_", "glpat-", "npm_", "AIza", "SG.")
_CLAUSE_ENDS = ";!?\n。"


def _classify_number(candidate: str) -> str | None:
    """A run of digits and separators → IP_ADDRESS, CREDIT_CARD, US_SSN, PHONE or nothing."""
    if candidate.count(".") == 3 and p.IPV4.fullmatch(candidate):
        return IP_ADDRESS if checks.ipv4_valid(candidate) else None
    digits = candidate.translate(_SEPARATORS)
    count = len(digits)
    if count < 7 or count > 19 or checks.DATE_LIKE.match(candidate):
        return None  # shorter than any phone number, SSN or card; longer than any card; a date
    if count == 9 and (ssn := p.SSN_SHAPE.fullmatch(candidate)) is not None:
        return US_SSN if checks.ssn_valid(ssn.group(1), ssn.group(3), ssn.group(4)) else None
    if count >= 13 and p.CARD_SHAPE.fullmatch(candidate) and checks.is_card_number(digits):
        return CREDIT_CARD
    return PHONE if count <= 15 and checks.phone_digits_valid(candidate, digits) else None


def _numbers(text: str, start: int, end: int, out: list[Finding]) -> None:
    """A run that is not one number as a whole may hold several side by side ("SSN 123-45-6789
    415-555-0132"): its space-separated pieces are tried, longest first from the left, and kept
    only if they explain the whole run (but for stray pieces of one or two digits). So the tail
    of a Luhn-invalid "6559 8565 0666 6362" is not reported as the phone number "0666 6362"."""
    candidate = text[start:end]
    kind = _classify_number(candidate)
    if kind is not None:
        out.append(Finding(start, end, kind))
        return
    if " " not in candidate:
        return
    pieces = [(m.start() + start, m.end() + start) for m in _PIECE.finditer(candidate)]
    if len(pieces) < 2 or len(pieces) > _MAX_NUMBER_CHUNKS:
        return
    found: list[Finding] = []
    i = 0
    while i < len(pieces):
        for j in range(len(pieces) - 1, i - 1, -1):
            if i == 0 and j == len(pieces) - 1:
                continue  # the whole run, already refused
            lo, hi = pieces[i][0], pieces[j][1]
            kind = _classify_number(text[lo:hi]) if text[hi - 1] in _DIGIT_SET else None
            if kind is not None:
                found.append(Finding(lo, hi, kind))
                i = j
                break
        else:
            if pieces[i][1] - pieces[i][0] > 2:
                return  # a piece no number explains: the run is something else
        i += 1
    out.extend(found)


def _free(text: str, start: int, end: int, before: frozenset[str], after: frozenset[str]) -> bool:
    """No character of ``before`` just before the span (but for an escape) and none of ``after``
    just after it."""
    return (start == 0 or text[start - 1] not in before or _escaped(text, start)) and (
        end == len(text) or text[end] not in after
    )


def _escaped(text: str, start: int) -> bool:
    """The span follows an escaped newline, tab or carriage return (``\\n``: JSON text inside JSON,
    log lines): the letter before it ends the escape, not a word the span would be part of."""
    return start > 1 and text[start - 2] == "\\" and text[start - 1] in "ntr"


def _emails(text: str, out: list[Finding]) -> None:
    at = text.find("@")
    while at != -1:
        start = at
        while start > 0 and at - start < 64 and text[start - 1] in p.LOCAL_PART_CHARS:
            start -= 1
        domain = p.EMAIL_DOMAIN.match(text, at + 1) if start < at else None
        if domain is not None:
            out.append(Finding(start, domain.end(), EMAIL))
            at = text.find("@", domain.end())
        else:
            at = text.find("@", at + 1)


def _secrets(text: str, out: list[Finding]) -> None:
    if (
        p.SECRET_HINT.search(text) is not None
        or ("_" in text and p.UNDERSCORE_HINT.search(text) is not None)
        or "SG." in text
    ):
        for match in p.SECRET.finditer(text):
            token = match.group()
            # An "sk-" key is random, so it has digits; "sk-this-is-a-long-slug-of-words" is not a key
            # (nor "sk_test_placeholder_for_the_docs", "hf_the_model_card_of_this_repository").
            # The other prefixes are specific enough (an AWS key id may well be all letters).
            if not token.startswith(_NEEDS_A_DIGIT) or any(ch in _DIGITS for ch in token):
                out.append(Finding(match.start(), match.end(), SECRET))
    if "PRIVATE KEY-----" in text:
        out.extend(Finding(m.start(), m.end(), SECRET) for m in p.PEM.finditer(text))
    if ("ecret" in text or "ECRET" in text) and ("aws" in text or "AWS" in text or "Aws" in text):
        out.extend(Finding(m.start("aws_value"), m.end("aws_value"), SECRET) for m in p.AWS_SECRET.finditer(text))


def _ipv6(text: str, out: list[Finding]) -> None:
    pos = 0
    while (match := p.IPV6.search(text, pos)) is not None:
        start, end = match.span()
        before = text[start - 1] if start else ""
        # "IP:2001:db8::1" is an address after a label; "ID:abcd:..." first matches from the "D".
        if (
            (before in _ALNUM and not _escaped(text, start))
            or before == "."
            or (before == ":" and match.group()[0] == ":")
        ):
            pos = start + 1
            continue
        candidate = match.group()
        # A ":" after all eight groups written out ends the address: "fe80:0:…:1: timeout".
        free = end == len(text) or text[end] not in _IPV6_AFTER
        if not free and text[end] == ":" and candidate.count(":") == 7 and "::" not in candidate:
            free = True
        if free and checks.ipv6_valid(candidate):
            out.append(Finding(start, end, IP_ADDRESS))
        pos = end


def _numbers_and_addresses(text: str, out: list[Finding]) -> None:
    iban_shaped: list[tuple[int, int]] = []
    for match in p.IBAN.finditer(text):
        start, end = match.span()
        if _free(text, start, end, _ALNUM, _ALNUM):
            iban_shaped.append((start, end))
            if checks.iban_valid(match.group().replace(" ", "")):
                out.append(Finding(start, end, IBAN))
    if text.count(":") >= 2:
        _ipv6(text, out)
    if "/" in text:
        _slashed_phones(text, out)
    length = len(text)
    for match in p.NUMBER.finditer(text):
        start, end = match.span()
        if not p.NUMBER_START.match(text, start):
            continue
        if start:
            before = text[start - 1]
            if before in _NUMBER_BEFORE and not _escaped(text, start):
                continue
            if before == ":" and start > 1 and text[start - 2] in _DIGIT_SET:
                continue  # the seconds of a time: "12:30:08.188841"
        # The digits of an IBAN-shaped string, valid or not, are its account number, not a phone.
        # (The IBAN-shaped spans are disjoint and in text order: one bisection, not a pass over all.)
        if iban_shaped:
            i = bisect.bisect_right(iban_shaped, (start, len(text) + 1)) - 1
            if i >= 0 and start < iban_shaped[i][1]:
                continue
        if start and text[start] == "+" and text[start - 1] == "(":
            start -= 1  # "(+44) 20 7946 0958": the parenthesis opens the number
        after = text[end] if end < length else ""
        glued = after in _NUMBER_AFTER
        if glued and after not in "xX":
            continue
        if after == "-" and end + 1 < length and text[end + 1] in _ALNUM:
            continue  # a part of a longer token: the "-X" of an ISBN, "123-456-AB"
        found = len(out)
        # "1.3.6.1.4.1" (an OID) is one run and no address; "10.0.0.1." ending a sentence is one.
        _numbers(text, start, end, out)
        if len(out) == found:
            # A bare number or two groups (`checks.context_phone`): never a dash or a dot.
            if not glued and text.find("-", start, end) < 0 and _context_phone(text, start, end):
                out.append(Finding(start, end, PHONE))
            continue
        last = out[-1]
        if last.kind == PHONE and last.end == end and after in _EXTENSION_START:
            # "545-741-4436x123", "(545) 741-4436 ext. 12": the extension is part of the number.
            extension = p.PHONE_EXTENSION.match(text, end)
            if extension is not None:
                out[-1] = Finding(last.start, extension.end(), PHONE)
                continue
        if glued:
            del out[found:]  # glued to letters, and not a phone number with its extension


def _context_phone(text: str, start: int, end: int) -> bool:
    """A number a word just before calls a phone number: "phone: 5457414436", "Tel. 333 1234567"
    (`checks.context_phone` for the shapes, `checks.phone_context` for the words)."""
    if not checks.context_phone(text[start:end]):
        return False
    before = text[max(0, start - _CONTEXT) : start]
    # Only words after the last number before it: in "call me at +1 415 555 0132, order 9741337041"
    # "call" is about the first number, not the order number.
    # Nor across the end of a clause: "phone field empty; id 9741337041".
    cut = max(max(before.rfind(d) for d in _DIGITS), max(before.rfind(c) for c in _CLAUSE_ENDS))
    return checks.phone_context(before[cut + 1 :])


def _slashed_phones(text: str, out: list[Finding]) -> None:
    """German-style national numbers with a slash after the area code: "030/12345678"."""
    for match in p.SLASHED_PHONE.finditer(text):
        start, end = match.span()
        if _free(text, start, end, _NUMBER_BEFORE, _SLASHED_AFTER):
            digits = match.group().translate(_SEPARATORS).replace("/", "")
            if 7 <= len(digits) <= 13:
                out.append(Finding(start, end, PHONE))


def may_hold_pii(text: str) -> bool:
    """The prefilter: False when ``text`` holds none of the characters and words every built-in
    kind's value needs (`patterns.PREFILTER_CHARS`, `patterns.PREFILTER_WORDS`), so no recognizer
    could find anything and none is run. Each recognizer below is gated by a test this one implies,
    so skipping loses nothing (bench/pii.py's recall is unchanged)."""
    for char in p.PREFILTER_CHARS:
        if char in text:
            return True
    for word in p.PREFILTER_WORDS:
        if word in text:
            return True
    return False


def lower_case_word(text: str) -> bool:
    """ASCII letters and digits only, at least one lower-case letter and no upper-case one: a trace
    or span id, a git hash, "assistant", "gpt4o". No built-in kind can be found in such a text: no
    "@", ".", ":", "=", "-" or "_" for e-mails, addresses, tokens and AWS secret keys, no upper case
    for IBANs, AWS key ids and JWTs, and a digit run in it touches a letter or spans the whole text
    (which has a letter), so it is never a free-standing number. Three C-speed tests; OTLP traces
    carry two such ids in their metadata."""
    return text.isascii() and text.isalnum() and text.islower()


def builtin_findings(text: str) -> list[Finding]:
    """Every built-in finding, unsorted and possibly overlapping (an IBAN's digits also read as a
    number run): `scan` resolves that."""
    out: list[Finding] = []
    if len(text) < _SHORTEST or lower_case_word(text) or not may_hold_pii(text):
        return out
    if "\u00a0" in text or "\u202f" in text or "\u2009" in text or "\u2011" in text:
        # No-break, narrow no-break and thin spaces group digits in typeset text ("06 12 34 56 78"),
        # a no-break hyphen joins them: read as a space and a hyphen, one character for one, so
        # the offsets are the text's.
        text = text.translate(_TYPESET)
    if "@" in text:
        _emails(text, out)
    _secrets(text, out)
    for digit in _DIGITS:
        if digit in text:
            _numbers_and_addresses(text, out)
            break
    return out


def resolve_overlaps(findings: Sequence[Finding], priority: dict[str, int]) -> list[Finding]:
    """Keep the longest finding where findings overlap; at equal length the kind earlier in
    `TIE_ORDER` (custom patterns after, in their order), then the earlier start. Deterministic
    whatever order the findings came in."""
    ranked = sorted(findings, key=lambda f: (f.start - f.end, priority.get(f.kind, len(priority)), f.start))
    starts: list[int] = []
    kept: list[Finding] = []
    for finding in ranked:
        i = bisect.bisect_right(starts, finding.start)
        if i > 0 and kept[i - 1].end > finding.start:
            continue
        if i < len(kept) and kept[i].start < finding.end:
            continue
        starts.insert(i, finding.start)
        kept.insert(i, finding)
    return kept


def scan(
    text: str,
    *,
    kinds: Collection[str] | None = None,
    custom: Sequence[CustomPattern] = (),
) -> list[Finding]:
    """Findings in ``text`` of the built-in ``kinds`` (default all) and the ``custom`` patterns,
    sorted by start; overlaps resolved by `resolve_overlaps`."""
    findings = builtin_findings(text)
    for pattern in custom:
        findings.extend(Finding(s, e, pattern.name) for s, e in pattern.finditer(text))
    if not findings:
        return findings
    kept = findings
    if len(findings) > 1:
        kept = sorted(findings)
        # Most texts' findings do not overlap: then every one is kept and `resolve_overlaps` would
        # return them sorted by start, which this is (a finding is never empty).
        if any(a.end > b.start for a, b in itertools.pairwise(kept)):
            priority = _PRIORITY
            if custom:
                priority = dict(_PRIORITY)
                for pattern in custom:
                    priority.setdefault(pattern.name, len(priority))
            kept = resolve_overlaps(findings, priority)
    if kinds is not None:
        # Filtered after resolving, so a kind left out never lets a shorter overlapping one through.
        kept = [f for f in kept if f.kind in kinds or f.kind not in _PRIORITY]
    return kept
