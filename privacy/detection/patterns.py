"""The candidate patterns of the built-in kinds.

A candidate becomes a finding only when its validator in `checks` agrees. Boundaries are ASCII
character checks rather than ``\\b``: in Japanese or Chinese text the characters around an address
are word characters too, and ``\\b`` would never match there. One alternation of all patterns was
measured 3x slower than separate passes (it defeats the engine's skip-ahead on the first
character), so each kind has its own pattern and runs only when a cheap literal test says it may
match (`scanner.builtin_findings`).
"""

from __future__ import annotations

import re

# API keys and tokens, by issuer. The span is the whole token.
_B64URL = r"[A-Za-z0-9_\-]"
_SECRET = "|".join(
    (
        r"sk-ant-(?:api\d\d-|admin\d\d-)?[A-Za-z0-9_\-]{20,}",  # Anthropic
        r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI (project, service account, legacy)
        r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])",  # AWS access key id
        r"gh[pousr]_[A-Za-z0-9]{36,255}",  # GitHub tokens
        r"github_pat_[A-Za-z0-9_]{22,255}",  # GitHub fine-grained token
        r"xox[abprs]-[A-Za-z0-9\-]{10,}",  # Slack
        r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}",  # Stripe secret and restricted keys
        r"AIza[A-Za-z0-9_\-]{35}(?![A-Za-z0-9_\-])",  # Google API key
        r"hf_[A-Za-z0-9]{30,}",  # Hugging Face
        r"glpat-[A-Za-z0-9_\-]{20,}",  # GitLab personal access token
        r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])",  # npm
        r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",  # SendGrid
        # JWT: a JSON header ('{"' is "eyJ" in base64url) and two more parts, whatever the payload
        # holds (claims, or encrypted or opaque bytes); "header.payload." (alg none), and the five
        # parts of an encrypted JWT (the second one empty with alg "dir"); "=" padding kept by
        # some encoders.
        rf"eyJ{_B64URL}{{5,}}={{0,2}}\.(?:{_B64URL}{{5,}}={{0,2}}\.{_B64URL}*|\.{_B64URL}{{5,}})={{0,2}}"
        rf"(?:\.{_B64URL}*\.{_B64URL}{{5,}}={{0,2}})?",
    )
)

# An AWS secret access key is 40 base64 characters with nothing to recognise it by but its name,
# so it counts only after one ("aws_secret_access_key = ...", "AWS secret key: ..."); the span is
# the key alone.
_AWS_SECRET = (
    r"(?i:aws)[A-Za-z_\- ]{0,20}(?i:secret)[A-Za-z_\- ]{0,20}[\"']?\s{0,3}[:=]{1,2}\s{0,3}[\"']?"
    r"(?P<aws_value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
)

_PEM = r"-----BEGIN (?:[A-Z0-9]+ ){0,3}PRIVATE KEY-----[\s\S]{1,16000}?-----END (?:[A-Z0-9]+ ){0,3}PRIVATE KEY-----"

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
LOCAL_PART_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
# The domain of an address, matched from just after its "@"; the local part is walked backwards.
EMAIL_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL}){{0,8}}\.[A-Za-z]{{2,24}}(?![A-Za-z0-9\-]|\.[A-Za-z0-9])")

SECRET = re.compile(rf"(?<![A-Za-z0-9_\-])(?:{_SECRET})")
# Literals one of which every token in SECRET starts with or holds: without one, no pass is needed.
# ("gh" alone would send most English prose through the pass: "though", "night".)
SECRET_HINTS: tuple[str, ...] = (
    "sk-", "AKIA", "ASIA", "ABIA", "ACCA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "xox", "eyJ",
    "AIza", "glpat-",
)  # fmt: skip
# One search for all of them: about half the cost of a test per hint on short texts. The search
# tries the alternatives wherever a text holds one of their first letters, so hints starting with
# common lower-case letters ("rk_", "hf_", "npm_") would slow it on all prose: those, which all
# hold "_", are searched only in texts with a "_", and "SG." on its own.
SECRET_HINT = re.compile("|".join(re.escape(hint) for hint in SECRET_HINTS))
UNDERSCORE_HINT = re.compile(r"[sr]k_|hf_|npm_")

# The prefilter (`scanner.may_hold_pii`): every built-in kind's value holds one of these characters
# or words, so a text holding none of them is skipped without running any recognizer. Each is
# looked for with `str.__contains__` (memchr-fast for one character); one regex alternation of
# them measured 5-8x slower than these separate tests on 2 KB of prose. Why each is here:
#   "@" e-mail; digits: phone, card, IBAN, SSN, IPv4 and IPv6 (the scanner needs a digit for
#   either); "-": sk-, sk-ant-, xox?- tokens and PEM blocks; "_": ghp_ … github_pat_ and
#   aws_secret_access_key; "IA"/"CCA": AKIA, ASIA, ABIA, ACCA key ids (may have no digit);
#   "eyJ": JWTs; "ecret"/"ECRET": an AWS secret key after its name ("AWS Secret: …"). Google
#   ("AIza…") and SendGrid ("SG.…") keys count only with a digit (`scanner._NEEDS_A_DIGIT`): a word
#   each would cost every clean text two more passes.
PREFILTER_CHARS = "@0123456789-_"
PREFILTER_WORDS: tuple[str, ...] = ("IA", "CCA", "eyJ", "ecret", "ECRET")
AWS_SECRET = re.compile(_AWS_SECRET)
PEM = re.compile(_PEM)

# The rest start with a character class (so the engine skips ahead fast) and have their
# boundaries checked by the scanner, which is quicker than a leading lookbehind.
IBAN = re.compile(r"[A-Z]{2}\d\d(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?")
IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
IPV6 = re.compile(r"(?:[0-9A-Fa-f]{0,4}:){2,7}(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9A-Fa-f]{1,4}|(?<=:))")
# Runs of digits with the separators people write numbers with: cards, SSNs and phone numbers
# are told apart afterwards (`scanner.classify_number`).
NUMBER = re.compile(r"[+(\d][\d \-.()]{4,41}\d")
NUMBER_START = re.compile(r"(?:\+|\(\+?)?\d")
# A national number with a slash after its area code (German usage): "030/12345678", "0151/2345 6789".
SLASHED_PHONE = re.compile(r"\(?0\d{1,4}\)?/ ?\d{2,8}(?:[ \-]\d{2,8})?(?!\d|[.,/]\d)")
# A phone number's extension after it: "545-741-4436x123", "(545) 741-4436 ext. 12".
PHONE_EXTENSION = re.compile(r" ?(?:[xX]|[eE]xt\.?) ?\d{1,6}(?![A-Za-z0-9_])")

# Shapes a digit run must have to be read as an SSN (one separator used twice) or a card number.
SSN_SHAPE = re.compile(r"(\d{3})([- ])(\d{2})\2(\d{4})")
CARD_SHAPE = re.compile(r"\d{4}(?:[ \-]?\d{2,7}){1,4}|\d{13,19}")
