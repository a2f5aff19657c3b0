// Automatic tracing of the official `openai` and `@anthropic-ai/sdk` packages, at `fetch`.
//
// Both packages send every request through the `fetch` they find on `globalThis` when a client is
// made, with their own User-Agent (`OpenAI/JS 6.x`, `Anthropic/JS 1.x`). Wrapping `globalThis.fetch`
// therefore traces them whichever module system loaded them (ESM, CommonJS, both copies at once, or a
// bundle), in whatever order: nothing depends on reaching the app's instance of the package. The
// wrapper is installed when tracerelay is loaded (so clients made before `init()` are traced too) and
// does nothing until `init()`.
//
// On the call's path: a string check of the URL and the User-Agent, a `Call` with the request's text,
// and, for replies, a hook on the Response's own `json()` (the SDKs parse with it; we keep the parsed
// object) or a pass-through of a stream's body that keeps its chunks. Parsing happens later (build.ts).
import { Call, context, type Endpoint, type Provider } from "./records.js";
import { UsageChunkFilter } from "./sse.js";
import { state } from "./state.js";

const MARK = Symbol.for("tracerelay.fetch");

type Fetch = typeof fetch;

export function installFetch(): void {
  const current = globalThis.fetch as Fetch & { [MARK]?: boolean };
  if (typeof current !== "function" || current[MARK]) return;
  state.originalFetch = current;
  const wrapped = function fetch(input: Parameters<Fetch>[0], init?: RequestInit): Promise<Response> {
    return traced(current, input, init);
  } as Fetch & { [MARK]?: boolean };
  wrapped[MARK] = true;
  globalThis.fetch = wrapped;
}

interface Target {
  provider: Provider;
  endpoint: Endpoint;
}

function header(headers: RequestInit["headers"], name: string): string | null {
  if (!headers) return null;
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name);
  if (Array.isArray(headers)) {
    for (const [key, value] of headers) if (key.toLowerCase() === name) return value;
    return null;
  }
  for (const key in headers as Record<string, string>) {
    if (key.toLowerCase() === name) return (headers as Record<string, string>)[key];
  }
  return null;
}

function recognise(url: string, init: RequestInit): Target | undefined {
  const agent = header(init.headers, "user-agent");
  if (agent === null) return undefined;
  let provider: Provider;
  if (agent.startsWith("OpenAI/JS")) provider = "openai";
  else if (agent.startsWith("Anthropic/JS")) provider = "anthropic";
  else return undefined;
  const q = url.indexOf("?");
  const path = q < 0 ? url : url.slice(0, q);
  let endpoint: Endpoint;
  if (provider === "anthropic") {
    if (!path.endsWith("/messages")) return undefined;
    endpoint = "messages";
  } else if (path.endsWith("/chat/completions")) endpoint = "chat";
  else if (path.endsWith("/responses")) endpoint = "responses";
  else if (path.endsWith("/embeddings")) endpoint = "embeddings";
  else return undefined;
  return { provider, endpoint };
}

function traced(original: Fetch, input: Parameters<Fetch>[0], init: RequestInit | undefined): Promise<Response> {
  const client = state.client;
  if (client === undefined || !client.instrumenting || init === undefined || (init.method ?? "GET").toUpperCase() !== "POST") {
    return original(input, init);
  }
  let call: Call | undefined;
  let filter: UsageChunkFilter | undefined;
  try {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : undefined;
    if (url === undefined) return original(input, init);
    if (url.startsWith(client.proxyPrefix)) return original(input, proxyHeaders(init));
    const target = recognise(url, init);
    if (target === undefined || typeof init.body !== "string") return original(input, init);
    call = new Call(target.provider, target.endpoint, init.body, context().getStore());
    call.retry = Number(header(init.headers, "x-stainless-retry-count")) || 0;
    const body = init.body;
    const at = body.lastIndexOf(STREAM_TRUE);
    if (at >= 0) {
      call.stream = true;
      if (target.endpoint === "chat" && client.config.injectStreamUsage && !body.includes('"stream_options"') && asksForStream(body, at)) {
        call.usageInjected = true;
        filter = new UsageChunkFilter();
        init = { ...init, body: body.slice(0, body.lastIndexOf("}")) + ',"stream_options":{"include_usage":true}}' };
      }
    }
  } catch {
    // our own trouble must never reach the call: send it as the app made it
    return original(input, init);
  }
  const record = call;
  return original(input, init).then(
    (response) => {
      try {
        observe(record, response, filter);
      } catch {
        // the response goes back untouched
      }
      return response;
    },
    (error: unknown) => {
      record.t1 = performance.now();
      record.failure = error;
      state.client?.record(record);
      throw error;
    },
  );
}

const STREAM_TRUE = '"stream":true';

/**
 * Whether the request body asks for a stream at its top level (`{"model":…,"stream":true}`), not in
 * something nested. Walks from the last `"stream":true` to the end, a few characters when `stream` is
 * the last key, as the SDKs write it; the rare rest is settled by parsing the body.
 */
function asksForStream(body: string, at: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = at + STREAM_TRUE.length; i < body.length; i++) {
    const c = body.charCodeAt(i);
    if (inString) {
      if (c === 92) i++; // a backslash escapes the next character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) {
      if (--depth < 0) {
        if (body.slice(i + 1).trim() === "") return true; // closed the body itself: top level
        break;
      }
    }
  }
  const request = JSON.parse(body);
  return request !== null && typeof request === "object" && request.stream === true && request.stream_options == null;
}

function proxyHeaders(init: RequestInit): RequestInit {
  // A call through tracerelay's own proxy is traced by the proxy; inside a span it names its run.
  const span = context().getStore();
  if (span === undefined) return init;
  try {
    const headers = new Headers(init.headers);
    headers.set("X-Service-Run-Id", span.runId);
    headers.set("X-Service-Parent-Id", span.id);
    return { ...init, headers };
  } catch {
    return init;
  }
}

const READERS = [
  ["json", true],
  ["text", false],
] as const;

function observe(call: Call, response: Response, filter: UsageChunkFilter | undefined): void {
  call.status = response.status;
  if (!response.ok) {
    // Error replies are small and rare: read a copy (the SDK may cancel its own without reading it).
    response
      .clone()
      .text()
      .then(
        (text) => (call.errorText = text),
        () => undefined,
      )
      .finally(() => {
        call.t1 = performance.now();
        state.client?.record(call);
      });
    return;
  }
  const type = response.headers.get("content-type") ?? "";
  if (call.stream && type.startsWith("text/event-stream") && response.body !== null) {
    wrapStream(call, response, filter);
    return;
  }
  call.stream = false;
  let done = false;
  const finish = (value: unknown, parsed: boolean): void => {
    if (done) return;
    done = true;
    call.t1 = performance.now();
    if (parsed) call.result = value;
    else if (typeof value === "string") {
      try {
        call.result = JSON.parse(value);
      } catch {
        call.result = undefined;
      }
    }
    state.client?.record(call);
  };
  // The SDKs read a JSON reply with the Response's own json() (text() for other types): keep what it gives them.
  for (const [name, parsed] of READERS) {
    const read = response[name] as (this: Response) => Promise<unknown>;
    Object.defineProperty(response, name, {
      configurable: true,
      writable: true,
      value: function (this: Response) {
        const promise = read.call(this);
        promise.then(
          (value) => finish(value, parsed),
          () => undefined,
        );
        return promise;
      },
    });
  }
}

const getReader = ReadableStream.prototype.getReader;

/**
 * Observes a stream's body in place: the body stays the same ReadableStream object (no second web
 * stream: constructing one costs more than everything else we do per call), with its own async
 * iterator (what the SDKs read it with: their ReadableStreamToAsyncIterable prefers it) and a
 * `getReader()` that goes through the same iterator. Each chunk is kept (a reference) with its arrival
 * time; the usage-only chunk we asked for is taken out.
 */
function wrapStream(call: Call, response: Response, filter: UsageChunkFilter | undefined): void {
  const source = response.body as ReadableStream<Uint8Array>;
  const chunks: Uint8Array[] = (call.chunks = []);
  const times: number[] = (call.times = []);
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  let ended = false;
  const finish = (failure?: unknown): void => {
    if (ended) return;
    ended = true;
    call.t1 = performance.now();
    if (failure !== undefined) call.failure = failure;
    state.client?.record(call);
  };
  let rest: Uint8Array | undefined; // what the filter held back, handed out after the source ended
  const iterator: AsyncIterableIterator<Uint8Array> = {
    async next(): Promise<IteratorResult<Uint8Array>> {
      if (rest !== undefined) {
        const value = rest;
        rest = undefined;
        return { done: false, value };
      }
      if (ended) return { done: true, value: undefined };
      reader ??= getReader.call(source) as ReadableStreamDefaultReader<Uint8Array>;
      for (;;) {
        let next: Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>["read"]>>;
        try {
          next = await reader.read();
        } catch (error) {
          finish(error);
          throw error;
        }
        if (next.done) {
          finish();
          const left = filter?.end();
          return left !== undefined && left.length ? { done: false, value: left } : { done: true, value: undefined };
        }
        chunks.push(next.value);
        times.push(performance.now());
        const out = filter === undefined ? next.value : filter.push(next.value);
        if (out.length) return { done: false, value: out };
      }
    },
    async return(value?: unknown): Promise<IteratorResult<Uint8Array>> {
      if (!ended) {
        finish(); // the app stopped reading: recorded with what arrived
        await (reader ?? source).cancel().catch(() => undefined);
      }
      return { done: true, value: value as undefined };
    },
    [Symbol.asyncIterator]() {
      return this;
    },
  };
  let closed: Promise<undefined> | undefined;
  const readerLike = {
    read: () => iterator.next(),
    releaseLock: () => undefined,
    cancel: async () => {
      await iterator.return?.();
    },
    get closed() {
      return (closed ??= (async () => undefined)());
    },
  };
  Object.defineProperty(source, Symbol.asyncIterator, { configurable: true, value: () => iterator });
  Object.defineProperty(source, "getReader", { configurable: true, value: () => readerLike });
}
