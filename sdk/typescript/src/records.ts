// What the application's side records: references and clock readings, no conversion. Building the
// trace (parsing bodies and streams, JSON) happens later, off the call's path (client.ts).
import { AsyncLocalStorage } from "node:async_hooks";
import type { BlockKind } from "./config.js";
import { newTraceId } from "./ids.js";
import { state } from "./state.js";

export type Provider = "openai" | "anthropic";
export type Endpoint = "chat" | "responses" | "embeddings" | "messages";

/** One HTTP request of an official LLM SDK, seen at `fetch`. */
export class Call {
  readonly type = "call";
  provider: Provider;
  endpoint: Endpoint;
  body: string; // the request's JSON text, parsed off the call's path
  started: number; // Date.now()
  t0: number; // performance.now() at the start, at the end
  t1 = 0;
  span: Span | undefined;
  stream = false;
  usageInjected = false;
  retry = 0;
  status = 0; // the provider's HTTP status, 0 without an answer
  result: unknown = undefined; // the parsed JSON reply
  errorText: string | undefined = undefined; // an error reply's body
  chunks: Uint8Array[] | undefined = undefined; // a stream's bytes as they came, and when
  times: number[] | undefined = undefined;
  failure: unknown = undefined; // fetch rejected, or the stream broke

  constructor(provider: Provider, endpoint: Endpoint, body: string, span: Span | undefined) {
    this.provider = provider;
    this.endpoint = endpoint;
    this.body = body;
    this.span = span;
    this.started = Date.now();
    this.t0 = performance.now();
  }
}

export interface SpanOptions {
  /** `chain` unless given: `agent`, `tool`, `retrieval`, `chain`, `workflow`, `guardrail`, `event`, `other`. */
  kind?: BlockKind;
  /** The span's input (captured unless `captureContent: false`). */
  input?: unknown;
  metadata?: Record<string, unknown>;
  tags?: string[];
  userId?: string;
  sessionId?: string;
  /** The parent span; default: the span running here (`currentSpan()`), none for a new run. */
  parent?: Span | null;
}

/** A span of a run: a block of the application's own work, and the parent of the calls made inside it. */
export class Span {
  readonly type = "span";
  readonly id: string;
  readonly runId: string;
  readonly parentId: string | null;
  readonly name: string;
  readonly kind: BlockKind;
  input: unknown;
  output: unknown = undefined;
  metadata: Record<string, unknown>;
  tags: string[];
  userId: string | undefined;
  sessionId: string | undefined;
  error: unknown = undefined;
  readonly started: number;
  readonly t0: number;
  t1 = 0;
  ended = false;

  constructor(name: string, kind: BlockKind, parent: Span | undefined, options: SpanOptions) {
    this.id = newTraceId();
    this.runId = parent ? parent.runId : this.id; // a run's root: its run_id is its own id
    this.parentId = parent ? parent.id : null;
    this.name = name;
    this.kind = kind;
    this.input = options.input;
    this.metadata = { ...(options.metadata ?? {}) };
    this.tags = [...(parent?.tags ?? []), ...(options.tags ?? [])];
    this.userId = options.userId ?? parent?.userId;
    this.sessionId = options.sessionId ?? parent?.sessionId;
    this.started = Date.now();
    this.t0 = performance.now();
  }

  setOutput(value: unknown): this {
    this.output = value;
    return this;
  }

  setInput(value: unknown): this {
    this.input = value;
    return this;
  }

  setMetadata(key: string, value: unknown): this {
    this.metadata[key] = value;
    return this;
  }

  addTags(...tags: string[]): this {
    this.tags.push(...tags);
    return this;
  }

  /** Marks the span failed (`status: error`, `error: {type, message}`) without ending it. */
  setError(error: unknown): this {
    this.error = error;
    return this;
  }

  /** Ends the span and queues it; calls after the first do nothing. Never throws. */
  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.t1 = performance.now();
    if (error !== undefined) this.error = error;
    state.client?.record(this);
  }

  /** Runs `fn` with this span as the current one: calls and spans started inside are its children. */
  run<T>(fn: (span: Span) => T): T {
    return context().run(this, fn, this);
  }
}

export function context(): AsyncLocalStorage<Span> {
  if (state.context === undefined) state.context = new AsyncLocalStorage<Span>();
  return state.context as AsyncLocalStorage<Span>;
}
