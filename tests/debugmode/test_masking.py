"""What debug records keep of a request: secrets masked by value (in every encoding), by name
and by shape; bodies cut to a documented size."""

from __future__ import annotations

import base64
import gzip
from urllib.parse import quote

from debugmode.masking import BODY_MAX_CHARS, MASK, Masker, secret_values

SECRET = "lf_sk_9f8e7d6c5b4a3f2e1d0c"
OPENAI = "sk-proj-Ab12Cd34Ef56Gh78Ij90KlMnOpQrSt"


def test_credential_headers_keep_their_name_and_scheme_only():
    masker = Masker()
    headers = masker.headers(
        [
            ("Authorization", "Bearer abc.def.ghi"),
            ("Authorization-Extra", "Basic dXNlcjpwYXNz"),
            ("DD-API-KEY", "0123456789abcdef"),
            ("X-Tracerelay-Signature", "t=1,v1=ffff"),
            ("Cookie", "session=1"),
            ("Content-Type", "application/json"),
        ]
    )
    assert headers == {
        "Authorization": f"Bearer {MASK}",
        "Authorization-Extra": f"Basic {MASK}",
        "DD-API-KEY": MASK,
        "X-Tracerelay-Signature": MASK,
        "Cookie": MASK,
        "Content-Type": "application/json",
    }


def test_known_secret_values_are_masked_in_every_form():
    masker = Masker([SECRET])
    basic = base64.b64encode(f"pk-lf-1:{SECRET}".encode()).decode()
    for text in (
        f"key={SECRET}",
        f"q={quote(SECRET)}",
        f"b64={base64.b64encode(SECRET.encode()).decode()}",
    ):
        assert SECRET not in masker.text(text) and MASK in masker.text(text)
    # Inside a longer base64 string (a Basic header) the value is not aligned: the header's name masks it.
    assert masker.header("Authorization", f"Basic {basic}") == f"Basic {MASK}"


def test_api_keys_are_masked_by_shape_in_bodies_and_urls():
    masker = Masker()
    body = masker.body(f'{{"prompt": "my key is {OPENAI}"}}'.encode(), {}, BODY_MAX_CHARS)
    assert OPENAI not in body["text"] and MASK in body["text"]
    url = masker.url(f"https://user:pw@example.com/v1?api_key=abc&page=2&q={OPENAI}")
    assert url.startswith(f"https://{MASK}@example.com/v1?api_key={MASK}&page=2&q=")
    assert OPENAI not in url and "pw" not in url


def test_bodies_are_cut_to_the_documented_size_after_masking():
    masker = Masker([SECRET])
    text = "x" * (BODY_MAX_CHARS - 5) + SECRET + "y" * 50_000
    body = masker.body(text.encode(), {}, BODY_MAX_CHARS)
    assert body["size"] == len(text)
    assert body["truncated"] is True
    assert len(body["text"]) == BODY_MAX_CHARS
    # The secret straddled the cut: it was masked first, so no half of it is left.
    assert body["text"] == "x" * (BODY_MAX_CHARS - 5) + MASK[:5]


def test_gzip_bodies_are_shown_decompressed_and_binary_ones_described():
    masker = Masker([SECRET])
    zipped = masker.body(gzip.compress(f"token {SECRET}".encode()), {"content-encoding": "gzip"}, 100)
    assert zipped["text"] == f"token {MASK}"
    binary = masker.body(b"\x0a\xff\xfe\x00", {"content-type": "application/x-protobuf"}, 100)
    assert binary["text"] is None and "application/x-protobuf" in binary["note"]


def test_secret_values_are_the_secret_fields_and_credential_headers():
    config = {
        "host": "https://cloud.langfuse.com",
        "publicKey": "pk-lf-1",
        "secretKey": SECRET,
        "headers": {"X-Api-Key": "hdr-secret-1", "X-Team": "blue"},
    }
    assert sorted(secret_values(config, {"secretKey"})) == sorted([SECRET, "hdr-secret-1"])
