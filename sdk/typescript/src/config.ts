// `init`'s options, resolved against the environment and checked once: the only place that throws.

export const SPAN_KINDS = [
  "llm",
  "embedding",
  "agent",
  "tool",
  "retrieval",
  "chain",
  "workflow",
  "guardrail",
  "event",
  "other",
] as const;
export type SpanKind = (typeof SPAN_KINDS)[number];
/** What a `trace()` / `startSpan` span may be: every kind but the calls' own (`llm`, `embedding` name a model). */
export const BLOCK_KINDS = ["agent", "tool", "retrieval", "chain", "workflow", "guardrail", "event", "other"] as const;
export type BlockKind = (typeof BLOCK_KINDS)[number];

/** A routing rule in the shape of the routing API (docs/routing.md), registered for this service. */
export type RoutingRule = Record<string, unknown>;

export interface InitOptions {
  /** The API key; else `TRACERELAY_API_KEY`. Required. */
  apiKey?: string;
  /** Stamped on every trace; names the service whose `routingRules` are registered. */
  serviceName?: string;
  /** Stamped on every trace (the server uses the key's environment when absent). */
  environment?: string;
  /** Log each trace and each request on stderr. */
  debug?: boolean;
  /** Fraction of traces (of runs, inside `trace()`) sent, decided from the id as the server does. Default 1. */
  samplingRate?: number;
  /** Rules registered on the server for `serviceName` (`PUT /api/v1/routing/rules/services/{name}`). */
  routingRules?: RoutingRule[];
  /** Batch mode: send every `flushInterval` ms or when `batchSize` traces wait. Default false (immediate). */
  batch?: boolean;
  /** Traces per request in batch mode (at most 1,000, the server's limit). Default 100. */
  batchSize?: number;
  /** Milliseconds between sends in batch mode. Default 1000. */
  flushInterval?: number;
  /** Traces held while the server is slow or down; beyond it new ones are dropped and counted. Default 10,000. */
  maxQueueSize?: number;
  /** The tracerelay server; else `TRACERELAY_BASE_URL`, else http://127.0.0.1:8000. */
  baseUrl?: string;
  /** false: no `input`/`output` (prompts, replies), metrics only. Default true. */
  captureContent?: boolean;
  /** Milliseconds per HTTP request to the server. Default 10,000. */
  timeout?: number;
  /** Milliseconds the process may be held at exit (and `shutdown()` may take) to send what is left. Default 2,000. */
  shutdownTimeout?: number;
  /** Retries of a request on 429, 5xx, 408 and network errors (not at exit). Default 5. */
  maxRetries?: number;
  /** Gzip request bodies over 512 bytes. Default true. */
  compress?: boolean;
  /** OpenAI chat streams: ask for usage (`stream_options.include_usage`) and hide that extra chunk. Default true. */
  injectStreamUsage?: boolean;
  /** Tags added to every trace. */
  tags?: string[];
  /** false: no automatic tracing of `openai` / `@anthropic-ai/sdk` calls, only `trace()` spans. Default true. */
  instrument?: boolean;
}

export interface Config {
  apiKey: string;
  baseUrl: string;
  serviceName?: string;
  environment?: string;
  debug: boolean;
  samplingRate: number;
  routingRules?: RoutingRule[];
  batch: boolean;
  batchSize: number;
  flushInterval: number;
  maxQueueSize: number;
  captureContent: boolean;
  timeout: number;
  shutdownTimeout: number;
  maxRetries: number;
  compress: boolean;
  injectStreamUsage: boolean;
  tags: string[];
  instrument: boolean;
}

export const DEFAULT_BASE_URL = "http://127.0.0.1:8000";

function env(name: string): string | undefined {
  const value = typeof process !== "undefined" ? process.env[name] : undefined;
  return value ? value : undefined;
}

function number(name: string, value: unknown, fallback: number, min: number, max = Infinity): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > max) {
    const range = max === Infinity ? `at least ${min}` : `between ${min} and ${max}`;
    throw new RangeError(`tracerelay: ${name} must be a number ${range}, not ${JSON.stringify(value)}`);
  }
  return value;
}

function text(name: string, value: unknown): string | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value !== "string") throw new TypeError(`tracerelay: ${name} must be a string`);
  return value;
}

export function resolveConfig(options: InitOptions = {}): Config {
  if (options === null || typeof options !== "object") throw new TypeError("tracerelay: init() takes an options object");
  const apiKey = text("apiKey", options.apiKey) ?? env("TRACERELAY_API_KEY");
  if (!apiKey) throw new TypeError("tracerelay: apiKey is required (or set TRACERELAY_API_KEY)");
  const baseUrl = (text("baseUrl", options.baseUrl) ?? env("TRACERELAY_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`tracerelay: baseUrl must be an http(s) URL, not ${JSON.stringify(baseUrl)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`tracerelay: baseUrl must be an http(s) URL, not ${JSON.stringify(baseUrl)}`);
  }
  const rules = options.routingRules;
  if (rules !== undefined && rules !== null && (!Array.isArray(rules) || rules.some((r) => r === null || typeof r !== "object"))) {
    throw new TypeError("tracerelay: routingRules must be an array of rule objects");
  }
  const tags = options.tags ?? [];
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== "string")) throw new TypeError("tracerelay: tags must be an array of strings");
  return {
    apiKey,
    baseUrl,
    serviceName: text("serviceName", options.serviceName),
    environment: text("environment", options.environment),
    debug: Boolean(options.debug),
    samplingRate: number("samplingRate", options.samplingRate, 1, 0, 1),
    routingRules: rules ? rules.map((r) => ({ ...r })) : undefined,
    batch: Boolean(options.batch),
    batchSize: Math.min(Math.floor(number("batchSize", options.batchSize, 100, 1)), 1000),
    flushInterval: number("flushInterval", options.flushInterval, 1000, 1),
    maxQueueSize: Math.floor(number("maxQueueSize", options.maxQueueSize, 10_000, 1)),
    captureContent: options.captureContent !== false,
    timeout: number("timeout", options.timeout, 10_000, 1),
    shutdownTimeout: number("shutdownTimeout", options.shutdownTimeout, 2_000, 0),
    maxRetries: Math.floor(number("maxRetries", options.maxRetries, 5, 0)),
    compress: options.compress !== false,
    injectStreamUsage: options.injectStreamUsage !== false,
    tags: [...tags],
    instrument: options.instrument !== false,
  };
}

/** `tr_prod_Ab…`: enough to tell keys apart in a log, never enough to use one. */
export function maskKey(key: string): string {
  const cut = key.lastIndexOf("_");
  const head = cut >= 0 ? key.slice(0, cut + 3) : key.slice(0, 2);
  return key.length > head.length ? `${head}…` : "…";
}
