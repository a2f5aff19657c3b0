// The real openai and @anthropic-ai/sdk packages against the fake upstream, traced in-process.
import assert from "node:assert/strict";
import { after, afterEach, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { flush, init, shutdown, stats, trace } from "tracerelay";
import { CHAT_WORDS, startCapture, startUpstream } from "./helpers/servers.mjs";

const MESSAGES = [{ role: "user", content: "hi" }];
let upstream;
let capture;
let openai;
let claude;

before(async () => {
  upstream = await startUpstream();
  openai = new OpenAI({ baseURL: `${upstream.url}/v1`, apiKey: "sk-test", maxRetries: 0 });
  claude = new Anthropic({ baseURL: upstream.url, apiKey: "sk-test", maxRetries: 0 });
});
after(() => upstream.close());

async function start(options = {}) {
  capture = await startCapture();
  init({ apiKey: "tr_dev_test", baseUrl: capture.url, serviceName: "shop", environment: "staging", ...options });
  upstream.requests.length = 0;
}

afterEach(async () => {
  await shutdown();
  capture.close();
});

test("a JSON chat call becomes one trace with tokens, output, input, service and environment", async () => {
  await start();
  const reply = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES, temperature: 0 });
  assert.equal(reply.choices[0].message.content, CHAT_WORDS.join(""));
  const [trace] = await capture.waitFor(1);
  assert.equal(trace.model, "gpt-4o-mini-2024-07-18");
  assert.equal(trace.provider, "openai");
  assert.equal(trace.prompt_tokens, 12);
  assert.equal(trace.completion_tokens, CHAT_WORDS.length);
  assert.deepEqual(trace.input, { model: "gpt-4o-mini", messages: MESSAGES, temperature: 0 });
  assert.deepEqual(trace.output, { role: "assistant", content: CHAT_WORDS.join(""), refusal: null });
  assert.equal(trace.service_name, "shop");
  assert.equal(trace.environment, "staging");
  assert.equal(trace.kind, "llm");
  assert.equal(trace.name, "chat gpt-4o-mini");
  assert.match(trace.id, /^trc_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
  assert.ok(trace.latency_ms > 0 && !("time_to_first_token_ms" in trace));
  assert.deepEqual(trace.metadata.sdk, { name: "tracerelay-typescript", version: "0.1.0", endpoint: "chat", stream: false });
  assert.ok(!("run_id" in trace), "a call outside any span is a run of its own");
});

test("a stream: usage asked for and the extra chunk hidden, so the app reads what it would have", async () => {
  await start();
  const stream = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES, stream: true });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.equal(chunks.length, CHAT_WORDS.length + 2); // role, the words, finish: no usage-only chunk
  assert.ok(chunks.every((c) => c.choices.length === 1));
  assert.deepEqual(upstream.requests[0].json.stream_options, { include_usage: true });
  const [trace] = await capture.waitFor(1);
  assert.equal(trace.completion_tokens, CHAT_WORDS.length);
  assert.equal(trace.prompt_tokens, 12);
  assert.deepEqual(trace.output, { role: "assistant", content: CHAT_WORDS.join(""), finish_reason: "stop" });
  assert.deepEqual(trace.input, { model: "gpt-4o-mini", messages: MESSAGES, stream: true }, "the app's request, as it asked");
  assert.ok(trace.time_to_first_token_ms > 0 && trace.time_to_first_token_ms <= trace.latency_ms);
  assert.equal(trace.metadata.sdk.usage_injected, true);
  assert.equal(trace.metadata.sdk.stream, true);
});

test("a stream whose app asked for usage itself is left alone and keeps its usage chunk", async () => {
  await start();
  const stream = await openai.chat.completions.create({
    model: "gpt-4o-mini",
    messages: MESSAGES,
    stream: true,
    stream_options: { include_usage: true },
  });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  assert.equal(chunks.at(-1).usage.completion_tokens, CHAT_WORDS.length);
  const [trace] = await capture.waitFor(1);
  assert.equal(trace.completion_tokens, CHAT_WORDS.length);
  assert.ok(!("usage_injected" in trace.metadata.sdk));
});

test("injectStreamUsage: false sends the request unchanged (no tokens known)", async () => {
  await start({ injectStreamUsage: false });
  const stream = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES, stream: true });
  for await (const _ of stream);
  assert.equal(upstream.requests[0].json.stream_options, undefined);
  const [trace] = await capture.waitFor(1);
  assert.equal(trace.prompt_tokens, undefined);
  assert.equal(trace.output.content, CHAT_WORDS.join(""));
});

test("a stream the app stops reading early is recorded with what arrived", async () => {
  await start();
  const stream = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES, stream: true });
  for await (const chunk of stream) if (chunk.choices[0]?.delta?.content === CHAT_WORDS[1]) break;
  const [trace] = await capture.waitFor(1);
  assert.ok(trace.output.content.startsWith(CHAT_WORDS[0] + CHAT_WORDS[1]));
});

test("responses (JSON and stream) and embeddings", async () => {
  await start();
  const response = await openai.responses.create({ model: "gpt-4o", input: "hi" });
  assert.equal(response.output_text, "Hi!");
  const events = await openai.responses.create({ model: "gpt-4o", input: "hi", stream: true });
  const types = [];
  for await (const event of events) types.push(event.type);
  assert.equal(types.length, 4);
  const embedding = await openai.embeddings.create({ model: "text-embedding-3-small", input: "x" });
  assert.equal(embedding.data[0].embedding.length, 4);
  const traces = await capture.waitFor(3);
  const [json, streamed, embedded] = traces;
  assert.deepEqual([json.model, json.prompt_tokens, json.completion_tokens], ["gpt-4o-2024-08-06", 7, 2]);
  assert.equal(json.output[0].content[0].text, "Hi!");
  assert.deepEqual([streamed.prompt_tokens, streamed.completion_tokens, streamed.metadata.sdk.stream], [7, 2, true]);
  assert.ok(streamed.time_to_first_token_ms > 0);
  assert.deepEqual(embedded.output, { embeddings: 1, dimensions: 4 });
  assert.deepEqual([embedded.kind, embedded.prompt_tokens, embedded.completion_tokens], ["embedding", 3, 0]);
});

test("anthropic messages, JSON and streamed; cache reads count as prompt tokens", async () => {
  await start();
  const message = await claude.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 16, messages: MESSAGES });
  assert.equal(message.content[0].text, "Bonjour! How can I help?");
  const stream = await claude.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 16, messages: MESSAGES, stream: true });
  let text = "";
  for await (const event of stream) if (event.type === "content_block_delta") text += event.delta.text;
  assert.equal(text, "Bonjour! How can I help?");
  const [json, streamed] = await capture.waitFor(2);
  for (const trace of [json, streamed]) {
    assert.equal(trace.provider, "anthropic");
    assert.equal(trace.prompt_tokens, 25);
    assert.equal(trace.completion_tokens, 9);
    assert.deepEqual(trace.output, { role: "assistant", content: [{ type: "text", text: "Bonjour! How can I help?" }], stop_reason: "end_turn" });
  }
  assert.ok(streamed.time_to_first_token_ms > 0 && json.time_to_first_token_ms === undefined);
});

test("a provider error is traced (rate_limited on 429) and reaches the app unchanged", async () => {
  await start();
  await assert.rejects(openai.chat.completions.create({ model: "error-429", messages: MESSAGES }), OpenAI.RateLimitError);
  await assert.rejects(claude.messages.create({ model: "error-500", max_tokens: 1, messages: MESSAGES }), Anthropic.InternalServerError);
  const [limited, failed] = await capture.waitFor(2);
  assert.equal(limited.status, "rate_limited");
  assert.deepEqual(limited.error, { type: "RateLimitError", message: "429 fake 429" });
  assert.deepEqual([limited.prompt_tokens, limited.completion_tokens, limited.metadata.status_code], [0, 0, 429]);
  assert.equal(failed.status, "error");
  assert.equal(failed.error.type, "InternalServerError");
});

test("an unreachable provider: the app gets its own connection error, and it is traced", async () => {
  await start();
  const dead = new OpenAI({ baseURL: "http://127.0.0.1:9/v1", apiKey: "sk", maxRetries: 0 });
  await assert.rejects(dead.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES }), OpenAI.APIConnectionError);
  const [trace] = await capture.waitFor(1);
  assert.equal(trace.status, "error");
  assert.equal(trace.error.type, "APIConnectionError");
});

test("captureContent: false sends metrics only", async () => {
  await start({ captureContent: false });
  await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES });
  await trace("block", { input: "secret" }, () => "also secret");
  const traces = await capture.waitFor(2);
  for (const t of traces) assert.ok(!("input" in t) && !("output" in t), JSON.stringify(t));
  assert.equal(traces[0].completion_tokens, CHAT_WORDS.length);
});

test("other requests pass through untraced; after shutdown() nothing is traced", async () => {
  await start();
  await openai.models.list().catch(() => undefined); // a GET
  const plain = await fetch(`${upstream.url}/v1/chat/completions`, { method: "POST", body: JSON.stringify({ model: "x" }) });
  assert.equal(plain.status, 200); // not from an official SDK: no User-Agent of theirs
  await shutdown();
  await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES });
  assert.equal(capture.traces.length, 0);
  assert.deepEqual(stats().captured, 0);
});

test("flush() resolves true once the server has everything", async () => {
  await start({ batch: true, flushInterval: 60_000 });
  for (let i = 0; i < 3; i++) await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES });
  assert.equal(capture.traces.length, 0, "batch mode waits for the interval or a full batch");
  assert.equal(await flush(), true);
  assert.equal(capture.traces.length, 3);
  assert.deepEqual(capture.requests.map((r) => r.path), ["/api/v1/traces/batch"]);
});

test("the helpers built on create (chat.completions.stream, messages.stream) and tool-call streams are traced once each", async () => {
  await start();
  const runner = openai.chat.completions.stream({ model: "gpt-4o-mini", messages: MESSAGES });
  const final = await runner.finalChatCompletion();
  assert.equal(final.choices[0].message.content, CHAT_WORDS.join(""));
  assert.ok(final.usage == null, "the app did not ask for usage: it does not get it");
  const helper = claude.messages.stream({ model: "claude-3-5-haiku-latest", max_tokens: 16, messages: MESSAGES });
  assert.equal((await helper.finalMessage()).content[0].text, "Bonjour! How can I help?");
  const [chat, messages] = await capture.waitFor(2);
  assert.deepEqual([chat.completion_tokens, chat.metadata.sdk.stream], [CHAT_WORDS.length, true]);
  assert.deepEqual([messages.provider, messages.completion_tokens], ["anthropic", 9]);
  assert.equal(capture.traces.length, 2);
});

test("a nested \"stream\":true does not make a JSON call a stream, and a stream key first still is one", async () => {
  await start();
  await openai.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: '{"stream":true}' }] });
  assert.equal(upstream.requests[0].json.stream_options, undefined);
  const stream = await openai.chat.completions.create({ stream: true, model: "gpt-4o-mini", messages: [{ role: "user", content: "x" }] });
  for await (const _ of stream);
  assert.deepEqual(upstream.requests[1].json.stream_options, { include_usage: true });
  const [plain, streamed] = await capture.waitFor(2);
  assert.equal(plain.output.content, CHAT_WORDS.join(""));
  assert.equal(streamed.completion_tokens, CHAT_WORDS.length);
});

test("the usage chunk is hidden however the bytes are cut, with LF or CRLF line ends", async () => {
  for (const model of ["gpt-4o-mini-split", "gpt-4o-mini-crlf"]) {
    await start();
    const stream = await openai.chat.completions.create({ model, messages: MESSAGES, stream: true });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.equal(chunks.length, CHAT_WORDS.length + 2, model);
    assert.equal(chunks.map((c) => c.choices[0].delta.content ?? "").join(""), CHAT_WORDS.join(""));
    const [trace] = await capture.waitFor(1);
    assert.deepEqual([trace.prompt_tokens, trace.completion_tokens], [12, CHAT_WORDS.length], model);
    assert.equal(trace.output.content, CHAT_WORDS.join(""));
    await shutdown();
    capture.close();
  }
  capture = await startCapture(); // for afterEach
});

test("a stream read with getReader() is observed and filtered too", async () => {
  await start();
  const response = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: MESSAGES, stream: true }).asResponse();
  const reader = response.body.getReader();
  let text = "";
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  assert.ok(!text.includes('"choices":[]'), "the injected usage event is not in the app's bytes");
  assert.equal(text.match(/^data: /gm).length, CHAT_WORDS.length + 3); // the chunks and [DONE]
  const [trace] = await capture.waitFor(1);
  assert.equal(trace.completion_tokens, CHAT_WORDS.length);
});
