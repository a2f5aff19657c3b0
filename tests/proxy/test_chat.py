from __future__ import annotations


def test_it_forwards_a_chat_completion(openai_client, proxy, fake_upstream):
    raw = openai_client.chat.completions.with_raw_response.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "Hello there! How can I help?"
    trace_id = raw.headers["x-service-id"]
    trace = proxy.trace(trace_id)
    print(trace.__dict__)
