// Sending: batch mode, the bounded queue, sampling, routing rules, refused and retried requests, gzip.
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { flush, init, samplePoint, shutdown, stats, trace } from "tracerelay";
import { startCapture } from "./helpers/servers.mjs";

let capture;
afterEach(async () => {
  await shutdown();
  capture?.close();
});

const blocks = (n, prefix = "b") => {
  for (let i = 0; i < n; i++) trace(`${prefix}${i}`, () => i);
};

test("init throws for a missing key or an option out of range, and only then", () => {
  const key = process.env.TRACERELAY_API_KEY;
  delete process.env.TRACERELAY_API_KEY;
  try {
    assert.throws(() => init({}), /apiKey is required/);
  } finally {
    if (key !== undefined) process.env.TRACERELAY_API_KEY = key;
  }
  assert.throws(() => init({ apiKey: "k", samplingRate: 1.5 }), /samplingRate must be a number between 0 and 1/);
  assert.throws(() => init({ apiKey: "k", batchSize: 0 }), RangeError);
  assert.throws(() => init({ apiKey: "k", baseUrl: "ftp://x" }), /http\(s\) URL/);
  assert.throws(() => init({ apiKey: "k", routingRules: {} }), /routingRules must be an array/);
});

test("the key and the server come from the environment when not given", async () => {
  capture = await startCapture();
  process.env.TRACERELAY_API_KEY = "tr_ci_fromenv";
  process.env.TRACERELAY_BASE_URL = capture.url;
  try {
    init();
    trace("x", () => 1);
    await capture.waitFor(1);
    assert.equal(capture.requests[0].headers.authorization, "Bearer tr_ci_fromenv");
    assert.match(capture.requests[0].headers["user-agent"], /^tracerelay-typescript\//);
  } finally {
    delete process.env.TRACERELAY_API_KEY;
    delete process.env.TRACERELAY_BASE_URL;
  }
});

test("batch mode sends batchSize traces per request", async () => {
  capture = await startCapture();
  init({ apiKey: "k", baseUrl: capture.url, batch: true, batchSize: 4, flushInterval: 60_000 });
  blocks(8);
  await capture.waitFor(8);
  assert.deepEqual(capture.requests.map((r) => [r.path, r.body.traces.length]), [["/api/v1/traces/batch", 4], ["/api/v1/traces/batch", 4]]);
  blocks(1);
  assert.equal(await flush(), true);
  assert.equal(capture.traces.length, 9);
});

test("batch mode sends what waits every flushInterval", async () => {
  capture = await startCapture();
  init({ apiKey: "k", baseUrl: capture.url, batch: true, flushInterval: 20 });
  blocks(3);
  await capture.waitFor(3);
  assert.equal(capture.requests.length, 1);
});

test("a full queue drops and counts new traces, never blocks", async () => {
  capture = await startCapture({ hang: true });
  init({ apiKey: "k", baseUrl: capture.url, batch: true, maxQueueSize: 5, flushInterval: 60_000 });
  blocks(12);
  const counts = stats();
  assert.equal(counts.dropped, 7);
  assert.equal(counts.queued, 5);
  assert.equal(await shutdown(50), false, "the black hole never answers: shutdown gives up in time");
});

test("samplingRate 0 sends nothing at all; a rate keeps exactly the runs whose point is below it", async () => {
  capture = await startCapture();
  init({ apiKey: "k", baseUrl: capture.url, samplingRate: 0 });
  blocks(5);
  assert.equal(await flush(), true);
  assert.equal(capture.requests.length, 0);
  assert.equal(stats().sampledOut, 5);
  await shutdown();

  init({ apiKey: "k", baseUrl: capture.url, samplingRate: 0.5, batch: true });
  const roots = [];
  for (let i = 0; i < 40; i++) {
    trace(`run${i}`, (root) => {
      roots.push(root);
      trace("child", () => 1);
    });
  }
  assert.equal(await flush(), true);
  const kept = new Set(roots.filter((r) => samplePoint(r.id) < 0.5).map((r) => r.id));
  assert.ok(kept.size > 5 && kept.size < 35);
  assert.equal(capture.traces.length, kept.size * 2, "a run is kept or dropped whole");
  assert.ok(capture.traces.every((t) => kept.has(t.run_id)));
});

test("routingRules are registered for the service before any trace", async () => {
  capture = await startCapture();
  const rules = [{ name: "errors", conditions: { error: true }, destination: "webhook" }];
  init({ apiKey: "k", baseUrl: capture.url, serviceName: "shop/checkout", routingRules: rules });
  trace("x", () => 1);
  await capture.waitFor(1);
  assert.deepEqual(capture.requests[0], {
    ...capture.requests[0],
    method: "PUT",
    path: "/api/v1/routing/rules/services/shop%2Fcheckout",
    body: { rules },
  });
  assert.equal(capture.requests[1].path, "/api/v1/traces");
  assert.equal(stats().routingRules, "registered");
});

test("routingRules refused (403) or without a serviceName: a warning, traces still flow", async () => {
  capture = await startCapture({ answer: (req) => (req.method === "PUT" ? { status: 403, body: { detail: "scope" } } : undefined) });
  init({ apiKey: "k", baseUrl: capture.url, serviceName: "shop", routingRules: [{ name: "r", destination: "webhook" }] });
  trace("x", () => 1);
  await capture.waitFor(1);
  assert.equal(stats().routingRules, "refused: 403");
  await shutdown();
  init({ apiKey: "k", baseUrl: capture.url, routingRules: [] });
  trace("y", () => 1);
  await capture.waitFor(2);
  assert.equal(stats().routingRules, "skipped: no serviceName");
});

test("a refused key (401) is counted rejected and not retried", async () => {
  capture = await startCapture({ answer: () => ({ status: 401, body: { title: "bad key" } }) });
  init({ apiKey: "tr_prod_bad", baseUrl: capture.url });
  trace("x", () => 1);
  assert.equal(await flush(), true);
  assert.deepEqual([stats().rejected, stats().requests, stats().sent], [1, 1, 0]);
});

test("5xx and 429 are retried (Retry-After honoured) with the same ids", async () => {
  let n = 0;
  capture = await startCapture({
    answer: () => (n++ < 2 ? { status: n === 1 ? 503 : 429, headers: { "retry-after": "0" }, body: {} } : undefined),
  });
  init({ apiKey: "k", baseUrl: capture.url });
  trace("x", () => 1);
  await capture.waitFor(1);
  assert.equal(stats().retries, 2);
  const ids = capture.requests.map((r) => r.body.id);
  assert.equal(new Set(ids).size, 1);
});

test("bodies over 512 bytes are gzipped; a server that cannot read gzip gets plain bodies", async () => {
  capture = await startCapture({
    answer: (req) => (req.headers["content-encoding"] === "gzip" ? { status: 415, body: {} } : undefined),
  });
  init({ apiKey: "k", baseUrl: capture.url });
  trace("big", { input: "x".repeat(2000) }, () => 1);
  await capture.waitFor(1);
  assert.deepEqual(capture.requests.map((r) => r.headers["content-encoding"]), ["gzip", undefined]);
  assert.equal(capture.traces[0].input.length, 2000);
});

test("207: the items the server refused are counted apart", async () => {
  capture = await startCapture({
    answer: (req, body) => (req.url.endsWith("/batch") ? { status: 207, body: { created: body.traces.length - 1, failed: 1, results: [{ status: 400, errors: { model: ["required"] } }] } } : undefined),
  });
  init({ apiKey: "k", baseUrl: capture.url, batch: true });
  blocks(3);
  assert.equal(await flush(), true);
  assert.deepEqual([stats().sent, stats().rejected], [2, 1]);
});
