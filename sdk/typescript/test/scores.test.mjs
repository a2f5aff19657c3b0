// score(): a trace's or a run's score on the wire, and null (never a rejection) when it is refused.
import assert from "node:assert/strict";
import { afterEach, test } from "node:test";
import { init, score, shutdown } from "tracerelay";
import { startCapture } from "./helpers/servers.mjs";

let capture;

const stored = (path, body) => ({
  status: 201,
  body: { id: "0190-score", trace_id: path.includes("/runs/") ? "root-span" : decodeURIComponent(path.split("/")[4]), name: body.name, value: body.value, data_type: typeof body.value === "number" ? "numeric" : typeof body.value === "boolean" ? "boolean" : "categorical", comment: body.comment ?? "", source: body.source ?? "api", created_at: "2026-11-27T18:00:00Z" },
});

async function start(answer) {
  capture = await startCapture({ answer: (req, body) => (req.url.endsWith("/scores") ? answer(req.url, body) : undefined) });
  init({ apiKey: "tr_dev_test", baseUrl: capture.url, instrument: false });
}

afterEach(async () => {
  await shutdown();
  capture?.close();
});

test("a trace's score is posted to its scores", async () => {
  await start(stored);
  const answer = await score({ traceId: "trc/1", name: "thumbs", value: true, comment: "great", source: "human" });
  assert.equal(answer.data_type, "boolean");
  const sent = capture.requests.filter((r) => r.path.endsWith("/scores"));
  assert.deepEqual(sent.map((r) => [r.method, r.path]), [["POST", "/api/v1/traces/trc%2F1/scores"]]);
  assert.deepEqual(sent[0].body, { name: "thumbs", value: true, comment: "great", source: "human" });
  assert.equal(sent[0].headers.authorization, "Bearer tr_dev_test");
});

test("a run's score is posted to the run's scores", async () => {
  await start(stored);
  const answer = await score({ runId: "run-42", name: "helpfulness", value: 0.8 });
  assert.equal(answer.trace_id, "root-span");
  const sent = capture.requests.filter((r) => r.path.endsWith("/scores"));
  assert.deepEqual(sent.map((r) => r.path), ["/api/v1/runs/run-42/scores"]);
  assert.deepEqual(sent[0].body, { name: "helpfulness", value: 0.8 });
});

test("a refusal, bad arguments or no init resolve null and send nothing wrong", async () => {
  await start(() => ({ status: 404, body: { type: "https://tracerelay.dev/problems/not-found", detail: "No run" } }));
  assert.equal(await score({ runId: "nope", name: "q", value: 1 }), null);
  assert.equal(await score({ traceId: "t", runId: "r", name: "q", value: 1 }), null);
  assert.equal(await score({ name: "q", value: 1 }), null);
  assert.equal(await score({ traceId: "t", name: "q", value: Number.NaN }), null);
  assert.equal(await score({ traceId: "t", name: "q" }), null);
  assert.equal(capture.requests.filter((r) => r.path.endsWith("/scores")).length, 1);
  await shutdown();
  assert.equal(await score({ traceId: "t", name: "q", value: 1 }), null);
});
