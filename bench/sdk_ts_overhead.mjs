#!/usr/bin/env node
// Added time per call of the TypeScript SDK, beside Langfuse's and OpenLLMetry's JS SDKs, in the same run.
//
//   (cd sdk/typescript && npm ci && npm run build)
//   (mkdir -p bench/.ts-peers && cd bench/.ts-peers && npm init -y >/dev/null && npm install openai@6.49.0 \
//      @langfuse/openai@5.11.1 @langfuse/otel@5.11.1 @langfuse/tracing@5.11.1 @opentelemetry/api@1.10.0 \
//      @opentelemetry/sdk-trace-node@2.12.1 @opentelemetry/sdk-trace-base@2.12.1 @traceloop/instrumentation-openai@0.27.0)
//   node bench/sdk_ts_overhead.mjs [--calls 2000] [--rounds 5]
//
// Each variant runs in its own Node process with the real `openai` package (from bench/.ts-peers) and
// `globalThis.fetch` replaced by an in-memory fake that answers at once (a chat completion, or a stream
// of 11 events, plus the usage event when asked), so a call costs only the openai package's own work and
// the instrumentation's. Inside that process the instrumentation is switched on and off in alternating
// blocks of calls (on, off, off, on, …), so the shared machine's load hits both sides alike:
//   tracerelay   init({...}) in immediate or batch mode, sending to a sink in the parent process; off:
//                no client (the fetch wrapper passes calls straight through)
//   langfuse     @langfuse/openai's observeOpenAI(client) + a NodeTracerProvider with LangfuseSpanProcessor
//                (exporting to the same sink); off: the unwrapped client
//   openllmetry  @traceloop/instrumentation-openai (manuallyInstrument) + a BatchSpanProcessor whose
//                exporter drops the spans; off: the original Completions.prototype.create put back
//   tracerelay-wrapper  no openai package: its requests sent straight to the fake fetch, bare (off) or
//                through tracerelay's wrapper (on), nothing sent during the calls: what the wrapper and the
//                recording cost on the call's path alone (the sending is in "incl. sending")
// After each block with the instrumentation on, its exporter/sender is flushed, timed apart; after every
// block a full GC runs, untimed, so no block pays for another's garbage.
// Figures per call, the median over the rounds (a fresh process each):
//   wall                 added time per awaited call (a stream: read to its end), as the app sees it
//   CPU                  added user+system CPU during the calls (whatever of the SDK's own sending ran
//                        meanwhile on the same thread included)
//   CPU incl. sending    the same plus the flushes: all the work the SDK did for the calls
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const PEERS = process.env.TS_PEERS ?? join(here, ".ts-peers");
const SDK = join(here, "..", "sdk", "typescript", "dist", "esm", "index.js");
const arg = (name, fallback) => {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
};

// --- the child: one variant -----------------------------------------------------------------------

const CHUNK_WORDS = ["Hello", " there", "!", " How", " can", " I", " help", "?"];

function fakeFetch() {
  const encoder = new TextEncoder();
  const base = { id: "chatcmpl-b", created: 1700000000, model: "gpt-4o-mini-2024-07-18" };
  const usage = { prompt_tokens: 12, completion_tokens: 8, total_tokens: 20 };
  const json = JSON.stringify({
    ...base,
    object: "chat.completion",
    choices: [{ index: 0, message: { role: "assistant", content: CHUNK_WORDS.join("") }, finish_reason: "stop" }],
    usage,
  });
  const event = (value) => encoder.encode(`data: ${JSON.stringify(value)}\n\n`);
  const head = { ...base, object: "chat.completion.chunk" };
  const chunks = [event({ ...head, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })];
  for (const word of CHUNK_WORDS) chunks.push(event({ ...head, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] }));
  chunks.push(event({ ...head, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
  const usageChunk = event({ ...head, choices: [], usage });
  const done = encoder.encode("data: [DONE]\n\n");
  return async function fetch(_url, init) {
    const body = String(init?.body ?? "");
    if (!body.includes('"stream":true')) {
      return new Response(json, { status: 200, headers: { "content-type": "application/json" } });
    }
    const parts = [...chunks, ...(body.includes('"include_usage":true') ? [usageChunk] : []), done];
    let i = 0;
    const stream = new ReadableStream({
      pull(controller) {
        if (i < parts.length) controller.enqueue(parts[i++]);
        else controller.close();
      },
    });
    return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
}

async function child(variant, calls, sink) {
  globalThis.fetch = fakeFetch(); // before any SDK loads: every one of them wraps or uses this fetch
  const peer = createRequire(join(PEERS, "package.json"));
  const openaiModule = await import(pathToFileURL(peer.resolve("openai")).href);
  const OpenAI = openaiModule.OpenAI ?? openaiModule.default.OpenAI; // the class (the CommonJS build, as a require would load it)
  const options = { apiKey: "sk-bench", baseURL: "http://fake.invalid/v1", maxRetries: 0 };
  let raw = new OpenAI(options);
  let instrumented = raw;
  let switchTo = (_on) => {};
  let flush = async () => {};
  let seen = () => -1; // calls the instrumentation recorded, to prove it was on
  if (variant.startsWith("tracerelay")) {
    const sdk = await import(pathToFileURL(SDK).href);
    sdk.init({ apiKey: "tr_dev_bench", baseUrl: sink, serviceName: "bench", batch: variant.endsWith("batch") });
    const state = globalThis[Symbol.for("tracerelay.state")];
    const client = state.client;
    instrumented = new OpenAI(options); // made after tracerelay was loaded, as the docs ask (raw keeps the bare fetch)
    seen = () => client.stats().captured;
    switchTo = (on) => (state.client = on ? client : undefined);
    flush = () => client.flush(30_000);
  } else if (variant === "langfuse") {
    const { NodeTracerProvider } = await import(pathToFileURL(peer.resolve("@opentelemetry/sdk-trace-node")).href);
    const { LangfuseSpanProcessor } = await import(pathToFileURL(peer.resolve("@langfuse/otel")).href);
    const { observeOpenAI } = await import(pathToFileURL(peer.resolve("@langfuse/openai")).href);
    const processor = new LangfuseSpanProcessor({ publicKey: "pk-lf-bench", secretKey: "sk-lf-bench", baseUrl: sink });
    new NodeTracerProvider({ spanProcessors: [processor] }).register();
    instrumented = observeOpenAI(new OpenAI(options));
    let spans = 0;
    processor.onEnd = ((onEnd) => (span) => {
      spans++;
      return onEnd.call(processor, span);
    })(processor.onEnd);
    seen = () => spans;
    flush = () => processor.forceFlush();
  } else if (variant === "openllmetry") {
    const { NodeTracerProvider } = await import(pathToFileURL(peer.resolve("@opentelemetry/sdk-trace-node")).href);
    const { BatchSpanProcessor } = await import(pathToFileURL(peer.resolve("@opentelemetry/sdk-trace-base")).href);
    const { OpenAIInstrumentation } = await import(pathToFileURL(peer.resolve("@traceloop/instrumentation-openai")).href);
    let spans = 0;
    const dropping = {
      export: (batch, done) => {
        spans += batch.length;
        done({ code: 0 });
      },
      shutdown: async () => {},
      forceFlush: async () => {},
    };
    seen = () => spans;
    const processor = new BatchSpanProcessor(dropping);
    const provider = new NodeTracerProvider({ spanProcessors: [processor] });
    provider.register();
    const instrumentation = new OpenAIInstrumentation();
    instrumentation.setTracerProvider(provider);
    const proto = OpenAI.Chat.Completions.prototype;
    const original = proto.create;
    instrumentation.manuallyInstrument(OpenAI); // the class: its static Chat.Completions, Responses …
    const wrapped = proto.create;
    if (wrapped === original) throw new Error("openllmetry did not wrap Completions.create");
    switchTo = (on) => (proto.create = on ? wrapped : original);
    flush = () => processor.forceFlush();
  }
  const messages = [{ role: "user", content: "hi" }];
  if (variant === "tracerelay-wrapper") {
    // No openai package: the requests it would send, straight to fetch, bare or through tracerelay's wrapper.
    const bare = globalThis.fetch;
    const sdk = await import(pathToFileURL(SDK).href);
    // batch mode with batches larger than a block: nothing is sent during the calls, all of it in the flush
    sdk.init({ apiKey: "tr_dev_bench", baseUrl: sink, serviceName: "bench", batch: true, batchSize: 1000, flushInterval: 1e9 });
    const wrapped = globalThis.fetch;
    const state = globalThis[Symbol.for("tracerelay.state")];
    const client = state.client;
    let current = bare;
    switchTo = (on) => {
      state.client = on ? client : undefined;
      current = on ? wrapped : bare;
    };
    flush = () => client.flush(30_000);
    seen = () => client.stats().captured;
    const headers = new Headers({ "User-Agent": "OpenAI/JS 6.49.0", "X-Stainless-Retry-Count": "0", "Content-Type": "application/json" });
    const post = (body) => current("http://fake.invalid/v1/chat/completions", { method: "POST", headers, body });
    const json = JSON.stringify({ model: "gpt-4o-mini", messages });
    const streamed = JSON.stringify({ model: "gpt-4o-mini", messages, stream: true });
    instrumented = raw = {
      chat: {
        completions: {
          create: async (params) => {
            const response = await post(params.stream ? streamed : json);
            if (!params.stream) return response.json();
            const decoder = new TextDecoder();
            const events = [];
            for await (const chunk of response.body) events.push(...decoder.decode(chunk, { stream: true }).split("\n\n").filter((e) => e.startsWith("data: {")));
            return (async function* () {
              yield* events;
            })();
          },
        },
      },
    };
  }
  const call = {
    json: (client) => client.chat.completions.create({ model: "gpt-4o-mini", messages }),
    stream: async (client) => {
      const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages, stream: true });
      let n = 0;
      for await (const _ of stream) n++;
      if (n !== 10) throw new Error(`the app saw ${n} chunks, not 10`);
    },
  };
  const block = 250;
  const out = {};
  for (const kind of ["json", "stream"]) {
    const sum = { on: { cpu: 0, wall: 0 }, off: { cpu: 0, wall: 0 }, flush: 0 };
    const run = async (on, n) => {
      switchTo(on);
      const client = on ? instrumented : raw;
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await call[kind](client);
      const wall = performance.now() - t0;
      const used = process.cpuUsage(cpu);
      const flushCpu = process.cpuUsage();
      if (on) await flush();
      const flushed = process.cpuUsage(flushCpu);
      switchTo(false);
      globalThis.gc(); // untimed: no block pays for the garbage another one left (its records, its spans)
      return { cpu: used.user + used.system, wall: wall * 1000, flush: flushed.user + flushed.system };
    };
    for (let i = 0; i < 3; i++) {
      await run(true, block); // warm up both paths
      await run(false, block);
    }
    for (let pair = 0; pair < calls / block; pair++) {
      for (const on of pair % 2 ? [true, false] : [false, true]) {
        const r = await run(on, block);
        const side = on ? sum.on : sum.off;
        side.cpu += r.cpu;
        side.wall += r.wall;
        if (on) sum.flush += r.flush;
      }
    }
    const n = Math.floor(calls / block) * block;
    out[kind] = {
      wall_us: (sum.on.wall - sum.off.wall) / n,
      cpu_us: (sum.on.cpu - sum.off.cpu) / n,
      total_cpu_us: (sum.on.cpu + sum.flush - sum.off.cpu) / n,
      plain_wall_us: sum.off.wall / n,
      plain_cpu_us: sum.off.cpu / n,
    };
  }
  out.recorded = seen();
  process.stdout.write(JSON.stringify(out));
}

// --- the parent: rounds of every variant, a sink for what they send ---------------------------------

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function parent() {
  const calls = Number(arg("--calls", 2000));
  const rounds = Number(arg("--rounds", 5));
  if (!existsSync(SDK)) throw new Error("build the SDK first: (cd sdk/typescript && npm ci && npm run build)");
  const variants = ["tracerelay-immediate", "tracerelay-batch"];
  const peer = createRequire(join(PEERS, "package.json"));
  const has = (name) => {
    try {
      peer.resolve(name);
      return true;
    } catch {
      return false;
    }
  };
  if (!has("openai")) throw new Error(`install openai (and the peers) into ${PEERS}: see the top of this file`);
  variants.push("tracerelay-wrapper");
  if (has("@langfuse/openai")) variants.push("langfuse");
  if (has("@traceloop/instrumentation-openai")) variants.push("openllmetry");
  let received = 0;
  const sink = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      res.writeHead(req.url.endsWith("/batch") ? 200 : 201, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  await new Promise((resolve) => sink.listen(0, "127.0.0.1", resolve));
  const sinkUrl = `http://127.0.0.1:${sink.address().port}`;
  const results = Object.fromEntries(variants.map((v) => [v, []]));
  const load = [];
  for (let round = 0; round < rounds; round++) {
    load.push(loadavg()[0]);
    for (const variant of variants) {
      const out = await new Promise((resolve, reject) => {
        const proc = spawn(process.execPath, ["--expose-gc", fileURLToPath(import.meta.url), "--child", variant, "--calls", String(calls), "--sink", sinkUrl], {
          stdio: ["ignore", "pipe", "inherit"],
        });
        let text = "";
        proc.stdout.on("data", (part) => (text += part));
        proc.on("close", (code) => (code === 0 ? resolve(JSON.parse(text)) : reject(new Error(`${variant} exited ${code}`))));
      });
      results[variant].push(out);
    }
  }
  sink.close();
  const mid = (variant, kind, field) => median(results[variant].map((r) => r[kind][field]));
  console.log(`node ${process.version}, ${cpus().length} cores, load average ${median(load).toFixed(1)} (median of the rounds), ${rounds} rounds of ${calls} calls per side and kind`);
  const plain = (kind, field) => median(variants.map((v) => mid(v, kind, field)));
  console.log(`a plain call: ${plain("json", "plain_wall_us").toFixed(0)} µs wall / ${plain("json", "plain_cpu_us").toFixed(0)} µs CPU (JSON), ${plain("stream", "plain_wall_us").toFixed(0)} / ${plain("stream", "plain_cpu_us").toFixed(0)} (stream of 11 events): the openai package's own work on a fake fetch`);
  console.log("\nAdded per call, µs (median of the rounds):");
  console.log("| instrumentation | JSON: wall | JSON: CPU | JSON: CPU incl. sending | stream: wall | stream: CPU | stream: CPU incl. sending |");
  console.log("|---|---|---|---|---|---|---|");
  const figures = {};
  for (const variant of variants) {
    const cells = ["json", "stream"].flatMap((kind) => ["wall_us", "cpu_us", "total_cpu_us"].map((field) => mid(variant, kind, field)));
    figures[variant] = cells.map((c) => Math.round(c * 10) / 10);
    console.log(`| ${variant} | ${cells.map((c) => c.toFixed(1)).join(" | ")} |`);
  }
  const recorded = Object.fromEntries(variants.map((v) => [v, results[v].map((r) => r.recorded)]));
  console.log(`\ncalls recorded by each instrumentation, per round (${Math.floor(calls / 250) * 250 * 2} instrumented calls + warm-up each): ${JSON.stringify(recorded)}`);
  console.log(`\n${JSON.stringify({ node: process.version, load: median(load), calls, rounds, figures })}`);
  console.log(`\n(requests received by the sink: ${received})`);
}

if (process.argv.includes("--child")) {
  child(arg("--child"), Number(arg("--calls", 2000)), arg("--sink")).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  parent().catch((error) => {
    console.error(error.message);
    process.exit(1);
  });
}
