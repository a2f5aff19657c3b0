// Loopback servers for the tests: a fake OpenAI + Anthropic upstream (the real SDKs talk to it) and a
// stand-in for the tracerelay server that keeps every request the SDK sends.
import http from "node:http";
import { gunzipSync } from "node:zlib";

export const CHAT_WORDS = ["Hello", " there", "!", " How", " can", " I", " help", "?"];

function listen(server) {
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      server.unref();
      resolve(`http://127.0.0.1:${server.address().port}`);
    });
  });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on("data", (part) => parts.push(part));
    req.on("end", () => resolve(Buffer.concat(parts)));
    req.on("error", reject);
  });
}

const sse = (value, event) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(value)}\n\n`;

/** The fake provider. `requests` holds {path, headers, json} of each call. */
export async function startUpstream() {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const raw = await readBody(req);
    const data = raw.length ? JSON.parse(raw.toString()) : {};
    requests.push({ path: req.url, headers: req.headers, json: data });
    const model = String(data.model ?? "");
    if (model.startsWith("error-")) {
      const status = Number(model.slice(6));
      res.writeHead(status, { "content-type": "application/json", "x-should-retry": "false" });
      res.end(JSON.stringify({ error: { message: `fake ${status}`, type: "fake_error" } }));
      return;
    }
    // "…-split" models: the bytes in 7-byte pieces (events cut anywhere); "…-crlf": CRLF line ends.
    const stream = async (chunks) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let text = chunks.join("");
      if (model.endsWith("-crlf")) text = text.replace(/\n/g, "\r\n");
      if (!model.endsWith("-split")) {
        for (const chunk of chunks) res.write(model.endsWith("-crlf") ? chunk.replace(/\n/g, "\r\n") : chunk);
      } else {
        for (let i = 0; i < text.length; i += 7) {
          res.write(text.slice(i, i + 7));
          await new Promise((resolve) => setImmediate(resolve)); // separate network reads
        }
      }
      res.end();
    };
    const json = (body) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.url.endsWith("/chat/completions")) {
      const usage = { prompt_tokens: 12, completion_tokens: CHAT_WORDS.length, total_tokens: 12 + CHAT_WORDS.length };
      const base = { id: "chatcmpl-fake", created: 1700000000, model: `${model}-2024-07-18` };
      if (!data.stream) {
        const message = { role: "assistant", content: CHAT_WORDS.join(""), refusal: null };
        return json({ ...base, object: "chat.completion", choices: [{ index: 0, message, finish_reason: "stop" }], usage });
      }
      const withUsage = Boolean(data.stream_options?.include_usage);
      const head = { ...base, object: "chat.completion.chunk", ...(withUsage ? { usage: null } : {}) };
      const chunks = [sse({ ...head, choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] })];
      for (const word of CHAT_WORDS) chunks.push(sse({ ...head, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] }));
      chunks.push(sse({ ...head, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
      if (withUsage) chunks.push(sse({ ...head, choices: [], usage }));
      chunks.push("data: [DONE]\n\n");
      return stream(chunks);
    }
    if (req.url.endsWith("/embeddings")) {
      const vector = new Float32Array([0.1, 0.2, 0.3, 0.4]);
      const embedding = data.encoding_format === "base64" ? Buffer.from(vector.buffer).toString("base64") : [...vector];
      return json({ object: "list", model, data: [{ object: "embedding", index: 0, embedding }], usage: { prompt_tokens: 3, total_tokens: 3 } });
    }
    if (req.url.endsWith("/responses")) {
      const output = [{ type: "message", id: "msg_1", status: "completed", role: "assistant", content: [{ type: "output_text", text: "Hi!", annotations: [] }] }];
      const response = { id: "resp_1", object: "response", created_at: 1700000000, status: "completed", model: `${model}-2024-08-06`, output, usage: { input_tokens: 7, output_tokens: 2, total_tokens: 9 } };
      if (!data.stream) return json(response);
      return stream([
        sse({ type: "response.created", sequence_number: 0, response: { ...response, status: "in_progress", output: [], usage: null } }, "response.created"),
        sse({ type: "response.output_text.delta", sequence_number: 1, item_id: "msg_1", output_index: 0, content_index: 0, delta: "Hi" }, "response.output_text.delta"),
        sse({ type: "response.output_text.delta", sequence_number: 2, item_id: "msg_1", output_index: 0, content_index: 0, delta: "!" }, "response.output_text.delta"),
        sse({ type: "response.completed", sequence_number: 3, response }, "response.completed"),
      ]);
    }
    if (req.url.endsWith("/messages")) {
      const usage = { input_tokens: 21, cache_creation_input_tokens: 0, cache_read_input_tokens: 4, output_tokens: 9 };
      const message = { id: "msg_fake", type: "message", role: "assistant", model, content: [{ type: "text", text: "Bonjour! How can I help?" }], stop_reason: "end_turn", stop_sequence: null, usage };
      if (!data.stream) return json(message);
      return stream([
        sse({ type: "message_start", message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }, "message_start"),
        sse({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }, "content_block_start"),
        sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Bonjour!" } }, "content_block_delta"),
        sse({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: " How can I help?" } }, "content_block_delta"),
        sse({ type: "content_block_stop", index: 0 }, "content_block_stop"),
        sse({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 9 } }, "message_delta"),
        sse({ type: "message_stop" }, "message_stop"),
      ]);
    }
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: "no such route" } }));
  });
  const url = await listen(server);
  return { url, requests, server, close: () => server.close() };
}

/**
 * A stand-in for the tracerelay server: stores what the SDK sends (`traces`, `requests`).
 * `answer(req)` may return {status, body} to answer otherwise; `hang: true` accepts and never answers.
 */
export async function startCapture({ answer, hang = false } = {}) {
  const traces = [];
  const requests = [];
  const waiters = [];
  const server = http.createServer(async (req, res) => {
    if (hang) return; // a black hole: the connection stays open, unanswered
    let raw = await readBody(req);
    if (req.headers["content-encoding"] === "gzip") raw = gunzipSync(raw);
    const body = raw.length ? JSON.parse(raw.toString()) : undefined;
    requests.push({ method: req.method, path: req.url, headers: req.headers, body });
    const custom = answer?.(req, body);
    if (custom) {
      res.writeHead(custom.status, { "content-type": "application/json", ...(custom.headers ?? {}) });
      res.end(JSON.stringify(custom.body ?? {}));
    } else if (req.method === "POST" && req.url === "/api/v1/traces") {
      traces.push(body);
      res.writeHead(201, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: body.id }));
    } else if (req.method === "POST" && req.url === "/api/v1/traces/batch") {
      traces.push(...body.traces);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ created: body.traces.length, existing: 0, failed: 0 }));
    } else {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ rules: body?.rules ?? [] }));
    }
    for (const waiter of waiters.splice(0)) waiter();
  });
  const sockets = new Set();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  const url = await listen(server);
  /** Resolves once `count` traces arrived (rejects after `ms`). */
  const waitFor = (count, ms = 10_000) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${traces.length} of ${count} traces arrived`)), ms);
      const check = () => {
        if (traces.length >= count) {
          clearTimeout(timer);
          resolve(traces);
        } else waiters.push(check);
      };
      check();
    });
  const close = () => {
    for (const socket of sockets) socket.destroy();
    server.close();
  };
  return { url, traces, requests, waitFor, server, close };
}

/** A port nothing listens on: connections to it are refused at once. */
export async function closedPort() {
  const server = http.createServer();
  const url = await listen(server);
  await new Promise((resolve) => server.close(resolve));
  return url;
}
