// Whole apps in their own processes (ESM and CommonJS, as their users write them): what they print,
// what reaches the server, and how soon they exit when the server is down.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { closedPort, startCapture, startUpstream } from "./helpers/servers.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const ESM_OUTPUT = "Hello there! How can I help?\nHello there! How can I help? (10 chunks)\n";
const CJS_OUTPUT = ESM_OUTPUT + "Bonjour! How can I help?\nBonjour! How can I help?\n";
let upstream;

before(async () => {
  upstream = await startUpstream();
});
after(() => upstream.close());

/** Runs an app; resolves {code, stdout, stderr, afterLastLine: ms from its last output to its exit}. */
function runApp(file, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(here, "apps", file)], {
      env: {
        ...process.env,
        OPENAI_BASE_URL: `${upstream.url}/v1`,
        OPENAI_API_KEY: "sk-test",
        ANTHROPIC_BASE_URL: upstream.url,
        ANTHROPIC_API_KEY: "sk-test",
        TRACERELAY_API_KEY: "tr_dev_test",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let last = performance.now();
    child.stdout.on("data", (part) => {
      stdout += part;
      last = performance.now();
    });
    child.stderr.on("data", (part) => (stderr += part));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, afterLastLine: performance.now() - last }));
  });
}

for (const [file, output, calls] of [
  ["chat.mjs", ESM_OUTPUT, 2],
  ["chat.cjs", CJS_OUTPUT, 4],
]) {
  test(`${file}: every call arrives as a trace with tokens, the service name and the environment`, async () => {
    const capture = await startCapture();
    const run = await runApp(file, { TRACERELAY_BASE_URL: capture.url });
    capture.close();
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, output);
    assert.equal(capture.traces.length, calls, JSON.stringify(capture.traces));
    for (const trace of capture.traces) {
      assert.ok(trace.prompt_tokens > 0 && trace.completion_tokens > 0, JSON.stringify(trace));
      assert.equal(trace.service_name, "shop");
      assert.equal(trace.environment, "staging");
    }
    assert.deepEqual(capture.traces.slice(0, 2).map((t) => t.metadata.sdk.stream), [false, true]);
  });

  test(`${file}: with the service down the output is the same and the app exits at once`, async () => {
    const run = await runApp(file, { TRACERELAY_BASE_URL: await closedPort() });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, output);
    console.log(`# ${file}, connection refused: exited ${run.afterLastLine.toFixed(0)} ms after its last line`);
    assert.ok(run.afterLastLine < 1500, `${run.afterLastLine} ms`);
  });

  test(`${file}: a server that never answers holds the exit for at most shutdownTimeout`, async () => {
    const capture = await startCapture({ hang: true });
    const run = await runApp(file, { TRACERELAY_BASE_URL: capture.url });
    capture.close();
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stdout, output);
    console.log(`# ${file}, server never answers: exited ${run.afterLastLine.toFixed(0)} ms after its last line`);
    assert.ok(run.afterLastLine < 2000 + 1500, `${run.afterLastLine} ms`);
  });
}

test("openai required before tracerelay (CommonJS): traced all the same", async () => {
  const capture = await startCapture();
  const run = await runApp("openai-first.cjs", { TRACERELAY_BASE_URL: capture.url });
  capture.close();
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, "1\n");
  assert.equal(capture.traces.length, 1);
  assert.deepEqual([capture.traces[0].kind, capture.traces[0].prompt_tokens], ["embedding", 3]);
});

test("samplingRate 0: the app sends nothing at all", async () => {
  const capture = await startCapture();
  const run = await runApp("chat.mjs", { TRACERELAY_BASE_URL: capture.url, APP_SAMPLING: "0" });
  capture.close();
  assert.equal(run.stdout, ESM_OUTPUT);
  assert.equal(capture.requests.length, 0);
});

test("node --import tracerelay/register traces an app without touching its code", async () => {
  const capture = await startCapture();
  const child = await new Promise((resolve) => {
    const proc = spawn(
      process.execPath,
      ["--import", "tracerelay/register", "-e", 'import("openai").then(async ({ default: OpenAI }) => { const c = new OpenAI({ maxRetries: 0 }); await c.embeddings.create({ model: "text-embedding-3-small", input: "x" }); })'],
      {
        cwd: join(here, ".."),
        env: { ...process.env, OPENAI_BASE_URL: `${upstream.url}/v1`, OPENAI_API_KEY: "sk", TRACERELAY_API_KEY: "tr_dev_test", TRACERELAY_BASE_URL: capture.url, TRACERELAY_SERVICE_NAME: "preloaded" },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    proc.stderr.on("data", (part) => (stderr += part));
    proc.on("close", (code) => resolve({ code, stderr }));
  });
  capture.close();
  assert.equal(child.code, 0, child.stderr);
  assert.equal(capture.traces.length, 1);
  assert.equal(capture.traces[0].service_name, "preloaded");
});
