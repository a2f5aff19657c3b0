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


def test_the_root_points_at_the_api_docs_and_the_admin(client):
    response = client.get("/")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    assert 'href="/api/v1/docs/"' in page and 'href="/admin/"' in page


def test_the_admin_spells_its_plurals(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert "Sampling policies" in page
    assert "policys" not in page
