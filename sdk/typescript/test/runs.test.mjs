// trace() / startSpan: the run fields of issue 22 (run_id, parent_id, kind, name), checked on the wire.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { after, afterEach, before, test } from "node:test";
import OpenAI from "openai";
import { currentSpan, init, shutdown, startSpan, trace } from "tracerelay";
import { startCapture, startUpstream } from "./helpers/servers.mjs";

const MESSAGES = [{ role: "user", content: "hi" }];
let upstream;
let capture;
let openai;

before(async () => {
  upstream = await startUpstream();
  openai = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: "sk-test", maxRetries: 0 });
});
after(() => upstream.close());

async function start(options = {}) {
  capture = await startCapture();
  init({ apiKey: "tr_dev_test", baseUrl: capture.url, serviceName: "agent", ...options });
}

afterEach(async () => {
  await shutdown();
  capture.close();
});

const byName = (traces) => Object.fromEntries(traces.map((t) => [t.name, t]));

test("nested trace() blocks and the calls inside them form one run", async () => {
  await start();
  const answer = await trace("answer", { kind: "agent", input: { q: "weather?" }, userId: "u-7", tags: ["rag"] }, async (root) => {
    const docs = await trace("search", { kind: "retrieval" }, async () => {
      await openai.embeddings.create({ model: "text-embedding-3-small", input: "weather" });
      return ["doc"];
    });
    const tool = trace("get_weather", { kind: "tool" }, () => ({ city: "Paris", sky: "clear" }));
    assert.equal(currentSpan(), root);
    const reply = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES });
    root.setMetadata("docs", docs.length);
    return `${reply.choices[0].message.content} ${tool.sky}`;
  });
  assert.equal(answer, "Hello there! How can I help? clear");
  const traces = byName(await capture.waitFor(5));
  const root = traces.answer;
  assert.deepEqual([root.kind, root.parent_id, root.run_id], ["agent", null, root.id]);
  assert.equal(root.output, answer, "a block's return value is its output");
  assert.deepEqual(root.input, { q: "weather?" });
  assert.equal(root.metadata.docs, 1);
  assert.equal(root.user_id, "u-7");
  assert.ok(!("model" in root) && !("prompt_tokens" in root), "a structural span carries no model or tokens");
  const search = traces.search;
  assert.deepEqual([search.kind, search.parent_id, search.run_id], ["retrieval", root.id, root.id]);
  const embedding = traces["embeddings text-embedding-3-small"];
  assert.deepEqual([embedding.kind, embedding.parent_id, embedding.run_id], ["embedding", search.id, root.id]);
  const tool = traces.get_weather;
  assert.deepEqual([tool.kind, tool.parent_id, tool.output], ["tool", root.id, { city: "Paris", sky: "clear" }]);
  const chat = traces["chat gpt-4o-mini"];
  assert.deepEqual([chat.kind, chat.parent_id, chat.run_id, chat.user_id], ["llm", root.id, root.id, "u-7"]);
  assert.deepEqual(chat.tags, ["rag"]);
  for (const t of Object.values(traces)) assert.equal(t.service_name, "agent");
});

test("a failing block is an error span and the error reaches the app unchanged", async () => {
  await start();
  const boom = new TypeError("no such city");
  await assert.rejects(trace("lookup", { kind: "tool" }, async () => Promise.reject(boom)), (e) => e === boom);
  assert.throws(() => trace("sync", () => {
    throw boom;
  }), (e) => e === boom);
  const traces = byName(await capture.waitFor(2));
  assert.deepEqual([traces.lookup.status, traces.lookup.error], ["error", { type: "TypeError", message: "no such city" }]);
  assert.equal(traces.sync.status, "error");
  assert.equal(traces.sync.kind, "chain", "the default kind");
});

test("a span kind that is not a block's (a typo, or a call's own llm) is sent as chain", async () => {
  await start();
  trace("typo", { kind: "agnet" }, () => 1);
  trace("llm", { kind: "llm" }, () => 1);
  startSpan("embedding", { kind: "embedding" }).end();
  const traces = await capture.waitFor(3);
  assert.deepEqual(traces.map((t) => t.kind), ["chain", "chain", "chain"]);
  for (const t of traces) assert.ok(!("model" in t), "a span never names a model");
});

test("startSpan: ids chosen at start, so a child can name its parent before the parent ends", async () => {
  await start();
  const workflow = startSpan("workflow", { kind: "workflow" });
  const step = startSpan("step", { parent: workflow, kind: "chain" });
  const event = startSpan("note", { parent: step, kind: "event" });
  event.end();
  await step.run(async () => {
    await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES });
  });
  step.setOutput("done").end();
  step.end(); // a second end() does nothing
  const traces = byName(await capture.waitFor(3));
  assert.equal(traces.note.parent_id, step.id);
  assert.equal(traces["chat gpt-4o-mini"].parent_id, step.id);
  assert.equal(traces.step.parent_id, workflow.id);
  assert.equal(traces.workflow, undefined, "not ended yet: not sent");
  workflow.end();
  const all = await capture.waitFor(4);
  assert.equal(all.length, 4);
  assert.ok(all.every((t) => t.run_id === workflow.id));
  assert.deepEqual(byName(all).workflow.parent_id, null);
});

test("concurrent runs keep their own context across awaits", async () => {
  await start();
  const run = (name) =>
    trace(name, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      await openai.chat.completions.create({ model: `m-${name}`, messages: MESSAGES });
    });
  await Promise.all([run("a"), run("b"), run("c")]);
  const traces = await capture.waitFor(6);
  const spans = byName(traces);
  for (const name of ["a", "b", "c"]) assert.equal(spans[`chat m-${name}`].parent_id, spans[name].id);
});

test("a call through tracerelay's proxy inside a span carries the run headers and is not traced twice", async () => {
  const proxied = [];
  capture = await startCapture({
    answer: (req, body) => {
      if (!req.url.startsWith("/api/v1/proxy/")) return undefined;
      proxied.push(req.headers);
      return { status: 200, body: { id: "x", object: "chat.completion", model: "gpt-4o-mini", choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }] } };
    },
  });
  init({ apiKey: "tr_dev_test", baseUrl: capture.url });
  const viaProxy = new OpenAI({ baseURL: `${capture.url}/api/v1/proxy/v1`, apiKey: "sk", maxRetries: 0, defaultHeaders: { "X-Service-Key": "tr_dev_test" } });
  const root = await trace("run", async (span) => {
    await viaProxy.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES });
    return span;
  });
  await viaProxy.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES }); // outside: no run headers
  const traces = await capture.waitFor(1);
  assert.equal(proxied[0]["x-service-run-id"], root.runId);
  assert.equal(proxied[0]["x-service-parent-id"], root.id);
  assert.equal(proxied[1]["x-service-run-id"], undefined);
  assert.deepEqual(traces.map((t) => t.name), ["run"], "the proxy traces the calls itself");
});

test("the ESM and the CommonJS build loaded together share one client and one span context", async () => {
  await start();
  const cjs = createRequire(import.meta.url)("tracerelay");
  assert.notEqual(cjs.trace, trace, "two copies of the module");
  await trace("esm-root", async () => {
    await cjs.trace("cjs-child", async () => {
      await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES });
    });
  });
  const traces = byName(await capture.waitFor(3));
  const root = traces["esm-root"];
  assert.equal(traces["cjs-child"].parent_id, root.id);
  assert.equal(traces["chat gpt-4o-mini"].parent_id, traces["cjs-child"].id);
  assert.equal(await cjs.flush(), true);
  assert.equal(cjs.stats().sent, 3);
});
