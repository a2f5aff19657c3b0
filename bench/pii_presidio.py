"""Presidio's pattern recognizers (no NLP model) over texts read as JSON from stdin.

Run by `bench/pii.py` with the interpreter of a separate virtualenv holding presidio-analyzer
(`.venv-presidio`, not part of the project's requirements):

    .venv-presidio/bin/python bench/pii_presidio.py < texts.json > findings.json

Prints ``{"findings": [[[kind, start, end], ...] per text], "seconds": <time spent analysing>}``,
kinds already renamed to ours. Every result is kept (score threshold 0, AnalyzerEngine's default);
of results on the same span, the highest-scoring one, as AnalyzerEngine does.
"""

from __future__ import annotations

import json
import logging
import sys
import time

logging.disable(logging.CRITICAL)  # tldextract logs a stack trace per failed suffix-list download

from presidio_analyzer.predefined_recognizers import (  # noqa: E402
    CreditCardRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    PhoneRecognizer,
    UsSsnRecognizer,
)

RENAME = {
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "CREDIT_CARD": "CREDIT_CARD",
    "IBAN_CODE": "IBAN",
    "US_SSN": "US_SSN",
    "IP_ADDRESS": "IP_ADDRESS",
}


def main() -> None:
    texts = json.load(sys.stdin)
    recognizers = [
        R()
        for R in (EmailRecognizer, PhoneRecognizer, CreditCardRecognizer, IbanRecognizer, UsSsnRecognizer, IpRecognizer)
    ]
    for r in recognizers:  # warm-up: the first email lookup loads the bundled public-suffix snapshot
        r.analyze("warm up a@example.com", r.supported_entities, None)
    out = []
    started = time.process_time()
    for text in texts:
        # Like AnalyzerEngine: of results on the same span, the highest score wins.
        best: dict[tuple[int, int], tuple[float, str]] = {}
        for r in recognizers:
            for result in r.analyze(text, r.supported_entities, None) or []:
                span = (result.start, result.end)
                if span not in best or result.score > best[span][0]:
                    best[span] = (result.score, RENAME.get(result.entity_type, result.entity_type))
        out.append([[kind, start, end] for (start, end), (_, kind) in sorted(best.items())])
    json.dump({"findings": out, "seconds": time.process_time() - started}, sys.stdout)


if __name__ == "__main__":
    main()
