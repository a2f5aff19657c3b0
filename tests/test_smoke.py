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


def test_the_root_sends_a_visitor_to_log_in(client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/login"


def test_the_admin_spells_its_plurals(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "Sampling policies" in page
    assert "policys" not in page
