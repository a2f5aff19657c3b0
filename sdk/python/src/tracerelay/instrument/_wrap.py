"""Wrapping a provider method: what runs on the caller's thread around the original call.

The wrapper takes two clock readings, keeps references to the arguments and the result and hands a
`Call` to the client's queue. A stream keeps its type and identity: only the iterator inside it (the
attribute the provider's stream class reads from) is replaced by one that notes each item and when it
came, and records the call when the stream ends, fails or is dropped.
"""

from __future__ import annotations

import functools
import importlib
import logging
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from .. import _state
from .._records import Call, current_span

log = logging.getLogger("tracerelay")

Build = Callable[[Call], dict[str, Any]]
Prepare = Callable[[Call, dict[str, Any]], None]
Skip = Callable[[Any], bool]
# `streams`: the keyword that asks for a stream ("stream"), or True / False for methods that always / never stream.

MARKER = "__tracerelay_original__"
_perf = time.perf_counter
_now = time.time


def _request(kwargs: dict[str, Any]) -> dict[str, Any]:
    # Lists are copied (an app appending to its `messages` after the call must not change the trace);
    # the items are not: they are converted on the worker thread, long before anyone edits them.
    return {k: list(v) if type(v) is list else v for k, v in kwargs.items()}


def through_proxy(resource: Any, prefix: str) -> bool:
    """Whether a provider call goes to tracerelay's own proxy (an `openai` / `anthropic` client whose
    base URL is ``<base_url>/api/v1/proxy/…``): the proxy records it, the SDK does not record it again.

    On every call's path, so cheap: the client's ``_base_url`` (its ``base_url`` property costs ~8 µs
    in openai 3.x), and the answer kept per URL object (a client's stays the same; turning an httpx URL
    into text costs ~2 µs)."""
    url = getattr(getattr(resource, "_client", None), "_base_url", None)
    if url is None:
        return False
    known = _proxied.get(id(url))
    if known is not None and known[0] is url and known[1] is prefix:
        return known[2]
    try:
        answer = f"{url}/".startswith(prefix)
    except Exception:
        answer = False
    if len(_proxied) >= 1000:  # clients made per request: bounded, not a leak
        _proxied.clear()
    _proxied[id(url)] = (url, prefix, answer)  # holding the URL keeps its id from being reused
    return answer


_proxied: dict[int, tuple[Any, str, bool]] = {}


def run_headers(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with the headers that attach a proxied call to the block running here (its run, and
    the block as its parent): `X-Service-Run-Id`, `X-Service-Parent-Id` (docs/proxy.md)."""
    span = current_span.get()
    if span is None:
        return kwargs
    headers = kwargs.get("extra_headers")
    try:
        merged = {**(headers or {}), "X-Service-Run-Id": span.run_id, "X-Service-Parent-Id": span.id}
    except TypeError:  # not a mapping: leave the call as the application made it
        return kwargs
    return {**kwargs, "extra_headers": merged}


def patch(owner: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> bool:
    """Replace ``owner.name`` by ``make(original)`` once; False when the attribute is missing."""
    original = owner.__dict__.get(name)
    if original is None:
        return False
    if getattr(original, MARKER, None) is not None:
        return True
    wrapper = make(original)
    functools.update_wrapper(wrapper, original)
    setattr(wrapper, MARKER, original)
    setattr(owner, name, wrapper)
    return True


def unpatch(owner: type, name: str) -> None:
    original = getattr(owner.__dict__.get(name), MARKER, None)
    if original is not None:
        setattr(owner, name, original)


def sync_method(
    provider: str,
    endpoint: str,
    build: Build,
    *,
    stream_attr: str | None = "_iterator",
    prepare: Prepare | None = None,
    skip: Skip | None = None,
    streams: str | bool = "stream",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            client = _state.client
            if client is None:
                return original(*args, **kwargs)
            if args and through_proxy(args[0], client.proxy_prefix):
                return original(*args, **run_headers(kwargs))
            call = Call(provider, endpoint, build, _request(kwargs))
            call.span = current_span.get()
            call.stream = streams if isinstance(streams, bool) else kwargs.get(streams) is True
            if prepare is not None:
                try:
                    prepare(call, kwargs)
                except Exception:  # never let our own change break the call
                    log.debug("tracerelay: prepare failed", exc_info=True)
            call.started = _now()
            call.t0 = _perf()
            try:
                result = original(*args, **kwargs)
            except BaseException as exc:
                call.t1 = _perf()
                call.error = exc
                client.record(call)
                raise
            call.t1 = _perf()
            if call.stream:
                if stream_attr is None and hasattr(result, "__next__"):  # the result is the iterator itself
                    return _items(result, call, None)
                if stream_attr is not None and _wrap_stream(
                    result, stream_attr, call, skip if call.usage_injected else None
                ):
                    return result
            call.result = result
            client.record(call)
            return result

        return wrapper

    return make


def async_method(
    provider: str,
    endpoint: str,
    build: Build,
    *,
    stream_attr: str | None = "_iterator",
    prepare: Prepare | None = None,
    skip: Skip | None = None,
    streams: str | bool = "stream",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def make(original: Callable[..., Any]) -> Callable[..., Any]:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            client = _state.client
            if client is None:
                return await original(*args, **kwargs)
            if args and through_proxy(args[0], client.proxy_prefix):
                return await original(*args, **run_headers(kwargs))
            call = Call(provider, endpoint, build, _request(kwargs))
            call.span = current_span.get()
            call.stream = streams if isinstance(streams, bool) else kwargs.get(streams) is True
            if prepare is not None:
                try:
                    prepare(call, kwargs)
                except Exception:
                    log.debug("tracerelay: prepare failed", exc_info=True)
            call.started = _now()
            call.t0 = _perf()
            try:
                result = await original(*args, **kwargs)
            except BaseException as exc:
                call.t1 = _perf()
                call.error = exc
                client.record(call)
                raise
            call.t1 = _perf()
            if call.stream:
                if stream_attr is None and hasattr(result, "__anext__"):
                    return _async_items(result, call, None)
                if stream_attr is not None and _wrap_async_stream(
                    result, stream_attr, call, skip if call.usage_injected else None
                ):
                    return result
            call.result = result
            client.record(call)
            return result

        return wrapper

    return make


def _wrap_stream(stream: Any, attr: str, call: Call, skip: Skip | None) -> bool:
    try:
        inner = getattr(stream, attr)
    except Exception:
        return False
    if not hasattr(inner, "__next__"):
        return False
    try:
        setattr(stream, attr, _items(inner, call, skip))
    except Exception:
        return False
    return True


def _items(inner: Iterator[Any], call: Call, skip: Skip | None) -> Iterator[Any]:
    """``inner``'s items, each noted with when it came; the call is recorded when they end, fail or are dropped."""
    chunks: list[Any] = []
    call.chunks = chunks
    ended = False
    try:
        for item in inner:
            chunks.append((_perf(), item))
            if skip is not None and skip(item):
                continue
            yield item
        ended = True
    except GeneratorExit:  # abandoned: the stream was dropped before its end
        raise
    except BaseException as exc:
        call.error = exc
        ended = True
        raise
    finally:
        call.t1 = _perf() if ended or not chunks else chunks[-1][0]
        client = _state.client
        if client is not None:
            client.record(call)


def _wrap_async_stream(stream: Any, attr: str, call: Call, skip: Skip | None) -> bool:
    try:
        inner = getattr(stream, attr)
    except Exception:
        return False
    if not hasattr(inner, "__anext__"):
        return False
    try:
        setattr(stream, attr, _async_items(inner, call, skip))
    except Exception:
        return False
    return True


async def _async_items(inner: AsyncIterator[Any], call: Call, skip: Skip | None) -> AsyncIterator[Any]:
    chunks: list[Any] = []
    call.chunks = chunks
    ended = False
    try:
        async for item in inner:
            chunks.append((_perf(), item))
            if skip is not None and skip(item):
                continue
            yield item
        ended = True
    except GeneratorExit:
        raise
    except BaseException as exc:
        call.error = exc
        ended = True
        raise
    finally:
        call.t1 = _perf() if ended or not chunks else chunks[-1][0]
        client = _state.client
        if client is not None:
            client.record(call)


# (module, class, method, endpoint, build, async, streams): one patched method of a provider library.
Target = tuple[str, str, str, str, Callable[..., Any], bool, bool]


def install_targets(provider: str, targets: list[Target], *, stream_attr: str | None) -> list[str]:
    """Patch each target that this install of the library has; the names of those patched."""
    done = []
    for module_name, class_name, method, endpoint, build, is_async, streams in targets:
        try:
            owner = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        factory = async_method if is_async else sync_method
        if patch(owner, method, factory(provider, endpoint, build, stream_attr=stream_attr, streams=streams)):
            done.append(f"{class_name}.{method}")
    return done


def uninstall_targets(targets: list[Target]) -> None:
    for module_name, class_name, method, *_ in targets:
        try:
            unpatch(getattr(importlib.import_module(module_name), class_name), method)
        except (ImportError, AttributeError):
            continue
