from accounts import keys


def test_it_generates_keys_that_parse_back_to_their_environment():
    for env in ("production", "development", "ci"):
        raw = keys.generate(env)
        assert keys.parse(raw) == env


def test_it_refuses_a_key_with_a_bad_checksum():
    raw = keys.generate("production")
    flipped = raw[:-1] + ("A" if raw[-1] != "A" else "B")
    assert keys.parse(flipped) is None


def test_healthz_answers(client):
    assert client.get("/healthz").json() == {"status": "ok"}
