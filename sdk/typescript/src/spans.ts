// `trace(name, fn)` and `startSpan(name)`: spans of the application's own work, nested into runs.
import { BLOCK_KINDS, type BlockKind } from "./config.js";
import { context, Span, type SpanOptions } from "./records.js";

function kindOf(kind: unknown): BlockKind {
  // Anything else (a typo, or a call's own `llm` / `embedding`, which the server requires a model of) is the default.
  return typeof kind === "string" && (BLOCK_KINDS as readonly string[]).includes(kind) ? (kind as BlockKind) : "chain";
}

/**
 * Starts a span (ended by `span.end()`). Its parent is `options.parent`, else the span running here; its
 * id is chosen now, so spans started under it (`{ parent: span }`) name it before it ends. It is not made
 * the current span: run code under it with `span.run(fn)`, or use `trace()`.
 */
export function startSpan(name: string, options: SpanOptions = {}): Span {
  const opts = options ?? {};
  const parent = opts.parent === undefined ? context().getStore() : (opts.parent ?? undefined);
  return new Span(String(name || "span"), kindOf(opts.kind), parent, opts);
}

/**
 * Runs `fn` inside a new span, the current one for everything `fn` does (LLM calls, nested `trace()`):
 * they join its run and name it as their parent. Returns what `fn` returns, the same value or promise;
 * a throw or rejection marks the span failed and reaches the caller unchanged.
 *
 *     await trace("answer-question", async (span) => { ...; span.setOutput(text); });
 *     await trace("search", { kind: "retrieval", input: query }, async () => search(query));
 */
export function trace<T>(name: string, fn: (span: Span) => T): T;
export function trace<T>(name: string, options: SpanOptions, fn: (span: Span) => T): T;
export function trace<T>(name: string, a: SpanOptions | ((span: Span) => T), b?: (span: Span) => T): T {
  const fn = (typeof a === "function" ? a : b) as (span: Span) => T;
  const options = typeof a === "function" ? {} : a;
  let span: Span;
  try {
    span = startSpan(name, options);
  } catch {
    return fn(undefined as unknown as Span); // never in practice; the app's work runs regardless
  }
  let result: T;
  try {
    result = context().run(span, fn, span);
  } catch (error) {
    span.end(error);
    throw error;
  }
  if (result !== null && typeof result === "object" && typeof (result as { then?: unknown }).then === "function") {
    (result as unknown as PromiseLike<unknown>).then(
      (value) => {
        if (span.output === undefined && value !== undefined) span.output = value;
        span.end();
      },
      (error: unknown) => span.end(error ?? new Error("rejected")),
    );
    return result;
  }
  if (span.output === undefined && result !== undefined) span.output = result;
  span.end();
  return result;
}

/** The span running here (inside `trace()` or `span.run()`), if any. */
export function currentSpan(): Span | undefined {
  return context().getStore();
}
