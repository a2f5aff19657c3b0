// tracerelay: traces of a Node.js application's LLM calls, sent to a tracerelay server in the background.
//
//     import { init } from "tracerelay";
//     init({ apiKey: process.env.TRACERELAY_API_KEY, serviceName: "checkout" });
//
// From then on every call made with the official `openai` or `@anthropic-ai/sdk` package (chat
// completions, responses, embeddings, messages; streamed or not) becomes one trace. Nothing here
// throws into the application once `init` has returned, no call waits on the network, and the
// process exits when it would have (docs/sdk-typescript.md).
import { Client, type Stats } from "./client.js";
import { type InitOptions, maskKey, resolveConfig } from "./config.js";
import { installFetch } from "./instrument.js";
import { state } from "./state.js";

export type { BlockKind, InitOptions, RoutingRule, SpanKind } from "./config.js";
export type { Stats } from "./client.js";
export { Span, type SpanOptions } from "./records.js";
export { currentSpan, startSpan, trace } from "./spans.js";
export { samplePoint } from "./ids.js";
export { score, type Score, type ScoreOptions } from "./scores.js";
export { VERSION } from "./version.js";

installFetch(); // a pass-through until init(): clients made between loading and init() are traced too

/** Starts sending traces. Throws only here, for a missing key or an option out of range. Calling it again replaces the client. */
export function init(options: InitOptions = {}): void {
  const config = resolveConfig(options);
  const old = state.client as Client | undefined;
  state.client = new Client(config);
  if (old !== undefined) void old.shutdown(old.config.shutdownTimeout).catch(() => undefined);
  if (config.instrument) installFetch();
  if (!state.exitHook) {
    state.exitHook = true;
    process.on("beforeExit", () => {
      try {
        (state.client as Client | undefined)?.atExit();
      } catch {
        // never in the app's way at exit
      }
    });
  }
  if (config.debug) {
    console.error(
      `tracerelay: sending to ${config.baseUrl} with key ${maskKey(config.apiKey)} ` +
        `(${config.batch ? "batch" : "immediate"} mode, sampling ${config.samplingRate})`,
    );
  }
}

/** Sends everything recorded so far; resolves true when done within `timeout` ms (default shutdownTimeout). Never rejects. */
export async function flush(timeout?: number): Promise<boolean> {
  const client = state.client as Client | undefined;
  if (client === undefined) return true;
  try {
    return await client.flush(timeout ?? client.config.shutdownTimeout);
  } catch {
    return false;
  }
}

/** Flushes (at most `timeout` ms, default shutdownTimeout) and stops: calls then pass straight through. Never rejects. */
export async function shutdown(timeout?: number): Promise<boolean> {
  const client = state.client as Client | undefined;
  if (client === undefined) return true;
  state.client = undefined;
  state.last = client;
  try {
    return await client.shutdown(timeout ?? client.config.shutdownTimeout);
  } catch {
    return false;
  }
}

/** Counters: captured, sent, dropped (queue full), sampledOut, failed, rejected, retries, requests, queued, routingRules. */
export function stats(): Stats | Record<string, never> {
  const client = (state.client ?? state.last) as Client | undefined;
  return client === undefined ? {} : client.stats();
}
