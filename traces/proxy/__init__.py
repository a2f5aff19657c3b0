"""The OpenAI/Anthropic-compatible proxy: a lean ASGI app in front of Django (see docs/proxy.md).

Hot path (`app`): authenticate from an in-process cache, forward to the upstream with aiohttp,
stream the answer back, hand a `Capture` to the background `writer`. Everything that touches the
database or parses bodies for the trace happens off that path, in threads.
"""
