// Records → the trace objects of `POST /api/v1/traces` (docs/api.md), in the shapes the Python SDK
// sends (sdk/python/src/tracerelay/_build.py), plus the run fields of a span tree (`run_id`,
// `parent_id`, `kind`, `name`). Runs off the call's path.
import type { Config } from "./config.js";
import { newTraceId } from "./ids.js";
import type { Call, Span } from "./records.js";
import { parseEvents, type SseEvent } from "./sse.js";
import { VERSION } from "./version.js";

const MAX_TEXT = 200;
const MAX_MESSAGE = 4000;

export type Trace = Record<string, any>;

/** The trace, and the id its sampling hangs on (the run's, so a run is kept or dropped whole). */
export function toTrace(item: Call | Span, config: Config): [Trace, string] {
  // by tag, not instanceof: a span of the ESM build may reach a client of the CommonJS build
  if (item.type === "span") return [spanTrace(item as Span, config), (item as Span).runId];
  const trace = callTrace(item as Call, config);
  return [trace, item.span ? item.span.runId : trace.id];
}

const ERROR_TYPES: Record<number, string> = {
  400: "BadRequestError",
  401: "AuthenticationError",
  403: "PermissionDeniedError",
  404: "NotFoundError",
  409: "ConflictError",
  422: "UnprocessableEntityError",
  429: "RateLimitError",
};

function callTrace(call: Call, config: Config): Trace {
  const request = parseJson(call.body); // the app's request as it made it (before any usage injection)
  const fields = call.status >= 200 && call.status < 300 ? readReply(call) : {};
  const model = fields.model || (request && typeof request.model === "string" ? request.model : undefined) || "unknown";
  const trace: Trace = {
    id: newTraceId(),
    model: String(model).slice(0, MAX_TEXT),
    provider: call.provider,
    timestamp: new Date(call.started).toISOString(),
    latency_ms: ms(call.t1 - call.t0),
  };
  for (const key of ["prompt_tokens", "completion_tokens", "output"] as const) if (fields[key] !== undefined) trace[key] = fields[key];
  if (fields.parts !== undefined) Object.assign(trace, fields.parts); // cached, cache-write, reasoning, audio tokens
  if (call.stream && fields.first !== undefined) trace.time_to_first_token_ms = ms(fields.first - call.t0);
  if (config.captureContent) trace.input = request ?? null;
  else delete trace.output;
  const sdk: Record<string, unknown> = {
    name: "tracerelay-typescript",
    version: VERSION,
    endpoint: call.endpoint,
    stream: call.stream,
  };
  if (call.usageInjected) sdk.usage_injected = true;
  if (call.retry) sdk.retry = call.retry;
  const metadata: Record<string, unknown> = { sdk };
  if (call.status >= 400 || call.status === 0 || call.failure !== undefined) {
    const billed = call.chunks !== undefined && call.chunks.length > 0;
    addError(trace, errorOf(call), call.status, billed);
    if (call.status) metadata.status_code = call.status;
  }
  trace.kind = call.endpoint === "embeddings" ? "embedding" : "llm";
  const operation = call.endpoint === "embeddings" ? "embeddings" : "chat";
  const asked = request && typeof request.model === "string" ? request.model : model;
  trace.name = `${operation} ${asked}`.slice(0, MAX_TEXT);
  const span = call.span;
  if (span !== undefined) {
    trace.run_id = span.runId;
    trace.parent_id = span.id;
    if (span.userId) trace.user_id = span.userId;
    if (span.sessionId) trace.session_id = span.sessionId;
  }
  addCommon(trace, metadata, span?.tags ?? [], config);
  return trace;
}

function spanTrace(span: Span, config: Config): Trace {
  const trace: Trace = {
    id: span.id,
    run_id: span.runId,
    parent_id: span.parentId,
    kind: span.kind,
    name: span.name.slice(0, MAX_TEXT),
    timestamp: new Date(span.started).toISOString(),
    latency_ms: ms(span.t1 - span.t0),
  };
  if (config.captureContent) {
    trace.input = jsonable(span.input);
    trace.output = jsonable(span.output);
  }
  if (span.error !== undefined) addError(trace, describe(span.error), 0, false, false);
  if (span.userId) trace.user_id = span.userId;
  if (span.sessionId) trace.session_id = span.sessionId;
  const metadata = jsonable(span.metadata) as Record<string, unknown>;
  addCommon(trace, { ...metadata, sdk: { name: "tracerelay-typescript", version: VERSION } }, span.tags, config);
  return trace;
}

function addCommon(trace: Trace, metadata: Record<string, unknown>, tags: string[], config: Config): void {
  if (config.serviceName) trace.service_name = config.serviceName.slice(0, MAX_TEXT);
  if (config.environment) trace.environment = config.environment.slice(0, 64);
  const all = [...config.tags, ...tags].map((t) => String(t).slice(0, MAX_TEXT)).filter((t) => t.trim());
  if (all.length) trace.tags = [...new Set(all)].slice(0, 50);
  trace.metadata = Object.fromEntries(Object.entries(metadata).slice(0, 64));
}

function addError(trace: Trace, error: { type: string; message: string }, status: number, billed: boolean, tokens = true): void {
  trace.status = status === 429 ? "rate_limited" : "error";
  trace.error = { type: error.type.slice(0, MAX_TEXT), message: error.message.slice(0, MAX_MESSAGE) };
  if (tokens && !billed && trace.prompt_tokens === undefined) {
    // No reply, no usage: nothing was billed (an estimate from the prompt would be wrong).
    trace.prompt_tokens = 0;
    trace.completion_tokens = 0;
  }
}

function errorOf(call: Call): { type: string; message: string } {
  if (call.status >= 400) {
    const body = parseJson(call.errorText ?? "");
    const detail = body?.error?.message ?? body?.message ?? call.errorText ?? "";
    const type = ERROR_TYPES[call.status] ?? (call.status >= 500 ? "InternalServerError" : "APIError");
    return { type, message: `${call.status} ${typeof detail === "string" ? detail : JSON.stringify(detail)}`.trim() };
  }
  const failure = call.failure as { name?: string } | undefined;
  if (failure?.name === "AbortError") return { type: "APIUserAbortError", message: describe(failure).message };
  return { type: "APIConnectionError", message: describe(failure).message };
}

function describe(error: unknown): { type: string; message: string } {
  if (error instanceof Error) return { type: error.name || error.constructor?.name || "Error", message: error.message };
  return { type: "Error", message: String(error) };
}

interface Reply {
  model?: string;
  output?: unknown;
  prompt_tokens?: number;
  completion_tokens?: number;
  parts?: Record<string, number>;
  first?: number;
}

function readReply(call: Call): Reply {
  if (call.chunks !== undefined) {
    const events = parseEvents(call.chunks, call.times ?? []);
    if (call.provider === "anthropic") return anthropicStream(events);
    if (call.endpoint === "responses") return responsesStream(events);
    return chatStream(events);
  }
  const result = call.result as any;
  if (result === null || typeof result !== "object") return {};
  switch (call.endpoint) {
    case "chat": {
      if (!Array.isArray(result.choices)) return {};
      return { model: result.model, output: oneOrMany(result.choices.map((c: any) => c?.message)), ...usage(result.usage) };
    }
    case "responses":
      return responseFields(result);
    case "embeddings": {
      if (!Array.isArray(result.data)) return {};
      return {
        model: result.model,
        output: { embeddings: result.data.length, dimensions: dimensions(result.data[0]?.embedding) },
        prompt_tokens: Number(result.usage?.prompt_tokens) || 0,
        completion_tokens: 0,
      };
    }
    case "messages": {
      if (result.content === undefined) return {};
      const output: Record<string, unknown> = { role: result.role ?? "assistant", content: result.content };
      if (result.stop_reason) output.stop_reason = result.stop_reason;
      return { model: result.model, output, ...usage(result.usage) };
    }
  }
  return {};
}

function dimensions(embedding: unknown): number | null {
  if (Array.isArray(embedding)) return embedding.length;
  // openai-node asks for base64 (float32 little-endian) unless the app chose a format
  if (typeof embedding === "string") return Math.floor(Buffer.byteLength(embedding, "base64") / 4);
  return null;
}

function chatStream(events: SseEvent[]): Reply {
  let model: string | undefined;
  let use: unknown;
  const messages = new Map<number, Record<string, any>>();
  for (const { data: chunk } of events) {
    if (chunk?.model) model = chunk.model;
    if (chunk?.usage) use = chunk.usage;
    for (const choice of chunk?.choices ?? []) {
      const index = choice?.index ?? 0;
      let message = messages.get(index);
      if (message === undefined) messages.set(index, (message = { role: "assistant", content: "" }));
      const delta = choice?.delta ?? {};
      if (delta.role) message.role = delta.role;
      if (delta.content) message.content += delta.content;
      for (const tool of delta.tool_calls ?? []) {
        const calls: Map<number, any> = (message.tool_calls ??= new Map());
        const at = tool?.index ?? 0;
        let entry = calls.get(at);
        if (entry === undefined) calls.set(at, (entry = { id: null, type: "function", function: {} }));
        entry.id = tool?.id || entry.id;
        if (tool?.function?.name) entry.function.name = tool.function.name;
        if (tool?.function?.arguments) entry.function.arguments = (entry.function.arguments ?? "") + tool.function.arguments;
      }
      if (choice?.finish_reason) message.finish_reason = choice.finish_reason;
    }
  }
  const outputs = [...messages.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, message]) => {
      if (message.tool_calls instanceof Map) {
        message.tool_calls = [...message.tool_calls.entries()].sort(([a], [b]) => a - b).map(([, v]) => v);
      }
      return message;
    });
  const first = firstTime(events, (chunk) =>
    (chunk?.choices ?? []).some((c: any) => c?.delta?.content || c?.delta?.tool_calls || c?.delta?.refusal),
  );
  return { model, output: outputs.length ? oneOrMany(outputs) : null, first, ...usage(use) };
}

function responseFields(response: any): Reply {
  if (response?.output === undefined) return {};
  return { model: response.model, output: response.output, ...usage(response.usage) };
}

function responsesStream(events: SseEvent[]): Reply {
  let final: any;
  const text: string[] = [];
  for (const { data: event } of events) {
    const kind = event?.type ?? "";
    if (kind === "response.completed" || kind === "response.incomplete" || kind === "response.failed") final = event.response;
    else if (kind === "response.output_text.delta") text.push(event.delta ?? "");
  }
  const first = firstTime(events, (event) => String(event?.type ?? "").endsWith(".delta"));
  if (final === undefined) return { output: text.join("") || null, first };
  return { ...responseFields(final), first };
}

function anthropicStream(events: SseEvent[]): Reply {
  let model: string | undefined;
  const use: Record<string, unknown> = {};
  const blocks = new Map<number, Record<string, any>>();
  let stopReason: string | undefined;
  const merge = (value: any): void => {
    for (const [k, v] of Object.entries(value ?? {})) if (v !== null && v !== undefined) use[k] = v;
  };
  for (const { data: event } of events) {
    switch (event?.type) {
      case "message_start":
        model = event.message?.model;
        merge(event.message?.usage);
        break;
      case "content_block_start":
        blocks.set(event.index ?? 0, { ...(event.content_block ?? {}) });
        break;
      case "content_block_delta": {
        let block = blocks.get(event.index ?? 0);
        if (block === undefined) blocks.set(event.index ?? 0, (block = { type: "text", text: "" }));
        const delta = event.delta ?? {};
        if (delta.text) block.text = (block.text ?? "") + delta.text;
        if (delta.partial_json) block.input_json = (block.input_json ?? "") + delta.partial_json;
        if (delta.thinking) block.thinking = (block.thinking ?? "") + delta.thinking;
        break;
      }
      case "message_delta":
        stopReason = event.delta?.stop_reason ?? stopReason;
        merge(event.usage);
        break;
    }
  }
  const content = [...blocks.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, block]) => {
      if ("input_json" in block) {
        block.input = block.input_json; // a tool call's arguments arrive as JSON text in pieces
        delete block.input_json;
      }
      return block;
    });
  const output: Record<string, unknown> = { role: "assistant", content };
  if (stopReason) output.stop_reason = stopReason;
  const first = firstTime(events, (event) => event?.type === "content_block_delta");
  return { model, output, first, ...usage(Object.keys(use).length ? use : undefined) };
}

/** prompt/completion tokens from an OpenAI or Anthropic usage object, as the proxy and the Python SDK read them. */
function usage(value: any): { prompt_tokens?: number; completion_tokens?: number; parts?: Record<string, number> } {
  if (value === null || typeof value !== "object") return {};
  const prompt = value.prompt_tokens ?? value.input_tokens;
  const completion = value.completion_tokens ?? value.output_tokens;
  if (prompt == null && completion == null) return {};
  // Anthropic counts cache reads and writes apart from input_tokens; OpenAI includes them.
  const cacheRead = Number(value.cache_read_input_tokens) || 0;
  const cacheWrite = Number(value.cache_creation_input_tokens) || 0;
  const fields: { prompt_tokens: number; completion_tokens: number; parts?: Record<string, number> } = {
    prompt_tokens: (Number(prompt) || 0) + cacheRead + cacheWrite,
    completion_tokens: Number(completion) || 0,
  };
  // The parts the server prices at their own rates (cached, cache-write, reasoning, audio).
  const promptDetails = value.prompt_tokens_details ?? value.input_tokens_details ?? {};
  const completionDetails = value.completion_tokens_details ?? value.output_tokens_details ?? {};
  const parts: Record<string, number> = {
    cached_tokens: cacheRead + (Number(promptDetails?.cached_tokens) || 0),
    cache_write_tokens: cacheWrite,
    input_audio_tokens: Number(promptDetails?.audio_tokens) || 0,
    reasoning_tokens: Number(completionDetails?.reasoning_tokens) || 0,
    output_audio_tokens: Number(completionDetails?.audio_tokens) || 0,
  };
  for (const [name, count] of Object.entries(parts)) if (count > 0) (fields.parts ??= {})[name] = count;
  return fields;
}

function firstTime(events: SseEvent[], hasContent: (data: any) => boolean): number | undefined {
  for (const event of events) if (hasContent(event.data)) return event.at;
  return events.length ? events[0].at : undefined;
}

function oneOrMany(values: unknown[]): unknown {
  return values.length === 1 ? values[0] : values;
}

function parseJson(text: string): any {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function ms(value: number): number {
  return Math.round(Math.max(value, 0) * 1000) / 1000;
}

/** An application's value → JSON it can be sent as (functions, symbols and cycles left out, bigints as text). */
export function jsonable(value: unknown): unknown {
  if (value === undefined) return null;
  const seen = new WeakSet<object>();
  try {
    return JSON.parse(
      JSON.stringify(value, (_key, v) => {
        if (typeof v === "bigint") return v.toString();
        if (typeof v === "object" && v !== null) {
          if (seen.has(v)) return "[circular]";
          seen.add(v);
        }
        return v;
      }) ?? "null",
    );
  } catch {
    return String(value);
  }
}
