// The client: a bounded queue the application's calls append to, and a sender that runs on timers,
// off the calls' path: building traces, sampling, JSON, gzip, HTTP, retries.
//
// The process is never kept alive by the SDK (every timer and socket is unref'd). When it would exit
// with traces still queued or in flight (`beforeExit`), one timer holds it for at most
// `shutdownTimeout` while each pending batch gets one try, without backoff; a refused connection
// ends that at once (the rest is dropped and counted).
import { type Config, maskKey } from "./config.js";
import { toTrace } from "./build.js";
import { samplePoint } from "./ids.js";
import type { Call, Span } from "./records.js";
import { type Answer, Transport } from "./transport.js";

const MAX_TRACE_BYTES = 1024 * 1024 - 4096; // the server's 1 MiB per trace, with room for what we add
const MAX_REQUEST_BYTES = 5 * 1024 * 1024; // under the server's 10 MiB per batch
const MAX_BACKOFF = 30_000;
const EXIT_TEARDOWN = 250; // ms of shutdownTimeout left for the process to exit after we let go

export interface Stats {
  captured: number; // traces built from records
  sent: number; // stored by the server (created, or already there)
  dropped: number; // the queue was full: never built
  sampledOut: number; // dropped by samplingRate
  failed: number; // given up on (server down, 5xx, 429 past maxRetries; at exit) or unreadable
  rejected: number; // refused by the server (400, 401, 403, 413, items of a 207): not retried
  retries: number;
  requests: number;
  queued: number;
  routingRules: string;
}

interface FlushMarker {
  flush: () => void;
}

type Item = Call | Span | FlushMarker;

export class Client {
  readonly config: Config;
  readonly transport: Transport;
  readonly instrumenting: boolean; // read by the fetch wrapper
  readonly proxyPrefix: string; // calls through tracerelay's own proxy are traced there, not here
  private queue: Item[] = [];
  private head = 0; // queue[head] is the next item: shift() is O(n)
  private counts = { captured: 0, sent: 0, dropped: 0, sampledOut: 0, failed: 0, rejected: 0, retries: 0, requests: 0 };
  private routingRules: string;
  private warned = new Set<string>();
  private running = false; // a send loop is under way
  private scheduled = false;
  private everything = false; // the next loop sends partial batches too (a flush, the interval, exit)
  private interval: ReturnType<typeof setInterval> | undefined;
  private sleeping: { timer: ReturnType<typeof setTimeout>; wake: () => void } | undefined;
  private exiting = false; // at exit: one try per batch, no backoff
  private exitTimer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;

  constructor(config: Config) {
    this.config = config;
    this.transport = new Transport(config.baseUrl, config.apiKey, config.timeout, config.compress);
    this.instrumenting = config.instrument;
    this.proxyPrefix = `${config.baseUrl}/api/v1/proxy/`;
    this.routingRules = config.routingRules === undefined ? "not requested" : "pending";
    if (config.routingRules !== undefined) this.schedule();
    if (config.batch) {
      this.interval = setInterval(() => {
        this.everything = true;
        this.schedule();
      }, config.flushInterval);
      this.interval.unref();
    }
  }

  // --- the application's side ---------------------------------------------------------------------

  record(item: Call | Span): void {
    if (this.stopped) return;
    if (this.queue.length - this.head >= this.config.maxQueueSize) {
      this.counts.dropped++;
      return;
    }
    this.queue.push(item);
    if (!this.config.batch || this.queue.length - this.head >= this.config.batchSize) this.schedule();
  }

  /** Sends everything recorded so far; false when `timeout` ms were not enough. Holds the process meanwhile. */
  flush(timeout: number): Promise<boolean> {
    if (this.queue.length === this.head && !this.running) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), timeout); // ref'd: an awaited flush keeps the process
      this.queue.push({
        flush: () => {
          clearTimeout(timer);
          resolve(true);
        },
      });
      this.everything = true;
      this.wakeUp();
      this.schedule();
    });
  }

  async shutdown(timeout: number): Promise<boolean> {
    if (this.interval !== undefined) clearInterval(this.interval);
    this.exiting = true; // one try per batch from here on
    const done = await this.flush(timeout);
    this.stopped = true;
    if (!done) this.giveUp("shutdown timeout");
    this.transport.close();
    return done;
  }

  /** `beforeExit`: the process is about to exit; send what is left within `shutdownTimeout`. */
  atExit(): void {
    if (this.stopped || this.exitTimer !== undefined) return;
    if (this.queue.length === this.head && !this.running) return;
    this.exiting = true;
    // The process's own teardown takes a little too: keep it inside the budget.
    const hold = Math.max(0, this.config.shutdownTimeout - EXIT_TEARDOWN);
    this.exitTimer = setTimeout(() => this.giveUp("shutdownTimeout at exit"), hold);
    this.everything = true;
    this.wakeUp();
    this.schedule();
  }

  stats(): Stats {
    let queued = 0;
    for (let i = this.head; i < this.queue.length; i++) if (!("flush" in this.queue[i])) queued++;
    return { ...this.counts, queued, routingRules: this.routingRules };
  }

  // --- the sender ----------------------------------------------------------------------------------

  private schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.loop();
    }).unref();
  }

  private async loop(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      if (this.routingRules === "pending") await this.registerRules();
      let everything = false; // once asked (a flush, the interval, exit), this loop sends partial batches too
      while (this.queue.length > this.head) {
        everything = everything || this.everything || !this.config.batch || this.exiting;
        this.everything = false;
        if (!everything && this.queue.length - this.head < this.config.batchSize) break;
        await this.sendBatch();
      }
    } catch (error) {
      this.warn("loop", `tracerelay: the sender failed (${String(error)})`);
    } finally {
      this.running = false;
      this.compact();
    }
    if (this.queue.length > this.head && (!this.config.batch || this.exiting || this.everything)) this.schedule();
    else this.exitDone();
  }

  /** Takes up to batchSize records (stopping at a flush marker) and sends them as one request. */
  private async sendBatch(): Promise<void> {
    const bodies: string[] = [];
    let size = 0;
    while (this.queue.length > this.head && bodies.length < this.config.batchSize) {
      const item = this.queue[this.head];
      if ("flush" in item) {
        if (bodies.length) break; // send what precedes it first
        this.head++;
        item.flush();
        continue;
      }
      const body = this.encode(item);
      if (body !== undefined && bodies.length && size + body.length > MAX_REQUEST_BYTES) break;
      this.head++;
      if (body === undefined) continue;
      bodies.push(body);
      size += body.length;
    }
    if (bodies.length) await this.send(bodies);
  }

  private encode(item: Call | Span): string | undefined {
    let trace: Record<string, any>;
    let group: string;
    try {
      [trace, group] = toTrace(item, this.config);
    } catch (error) {
      this.counts.failed++;
      this.warn("build", `tracerelay: could not build a trace (${String(error)})`);
      return undefined;
    }
    this.counts.captured++;
    const rate = this.config.samplingRate;
    if (rate < 1 && samplePoint(group) >= rate) {
      this.counts.sampledOut++;
      return undefined;
    }
    let body: string;
    try {
      body = JSON.stringify(trace);
      if (Buffer.byteLength(body) > MAX_TRACE_BYTES) {
        trace.input = { truncated: true, bytes: Buffer.byteLength(body) };
        trace.output = null;
        body = JSON.stringify(trace);
      }
    } catch (error) {
      this.counts.failed++;
      this.warn("encode", `tracerelay: could not encode a trace (${String(error)})`);
      return undefined;
    }
    if (this.config.debug) console.error(`tracerelay: trace ${body}`);
    return body;
  }

  private async send(bodies: string[]): Promise<void> {
    const single = bodies.length === 1;
    const path = single ? "/api/v1/traces" : "/api/v1/traces/batch";
    const body = Buffer.from(single ? bodies[0] : `{"traces":[${bodies.join(",")}]}`);
    let answer: Answer | undefined;
    try {
      answer = await this.deliver("POST", path, body, bodies.length);
    } catch (error) {
      // a bug of ours or of zlib's: lose these traces, not the sender
      this.warn("send", `tracerelay: sending failed (${String(error)})`);
    }
    if (answer === undefined) {
      this.counts.failed += bodies.length;
      return;
    }
    if (answer.status === 200 || answer.status === 201) {
      this.counts.sent += bodies.length;
    } else if (answer.status === 207 && answer.body && typeof answer.body === "object") {
      const refused = Number(answer.body.failed) || 0;
      this.counts.sent += bodies.length - refused;
      this.counts.rejected += refused;
      for (const result of answer.body.results ?? []) {
        if (result && result.status >= 400) this.warn("item", `tracerelay: the server refused a trace: ${JSON.stringify(result.errors)}`);
      }
    } else {
      this.counts.rejected += bodies.length;
      this.warn(`status-${answer.status}`, `tracerelay: the server refused ${bodies.length} trace(s) with ${answer.status}: ${detail(answer)}`);
    }
  }

  /** One request, retried on 429, 5xx, 408 and network errors (not at exit); undefined when every try failed. */
  private async deliver(method: string, path: string, body: Buffer | null, count: number): Promise<Answer | undefined> {
    let delay = 500;
    let answer: Answer = { status: 0 };
    for (let attempt = 0; attempt <= this.config.maxRetries; attempt++) {
      const started = performance.now();
      answer = await this.transport.request(method, path, body);
      this.counts.requests++;
      if (this.config.debug) {
        console.error(
          `tracerelay: ${method} ${path} (${count} trace(s), ${body?.length ?? 0} bytes, key ${maskKey(this.config.apiKey)}) → ` +
            `${answer.status || answer.error} in ${(performance.now() - started).toFixed(1)} ms`,
        );
      }
      const retryable = answer.status === 0 || answer.status === 408 || answer.status === 429 || answer.status >= 500;
      if (!retryable) return answer;
      if (this.exiting) {
        if (answer.unreachable) this.giveUp(`${this.config.baseUrl} refused the connection at exit`);
        break;
      }
      if (attempt === this.config.maxRetries) break;
      this.counts.retries++;
      const wait = answer.retryAfter ?? delay * (0.5 + Math.random());
      await this.sleep(Math.min(wait, MAX_BACKOFF));
      delay = Math.min(delay * 2, MAX_BACKOFF);
    }
    this.warn(
      "unreachable",
      `tracerelay: could not deliver to ${this.config.baseUrl} (${answer.status || answer.error}); traces are dropped and counted in stats()`,
    );
    return undefined;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.sleeping = undefined;
        resolve();
      }, ms);
      timer.unref();
      this.sleeping = { timer, wake: resolve };
    });
  }

  /** Cuts a backoff short (a flush or exit wants the next try now). */
  private wakeUp(): void {
    const sleeping = this.sleeping;
    if (sleeping !== undefined) {
      this.sleeping = undefined;
      clearTimeout(sleeping.timer);
      sleeping.wake();
    }
  }

  /** Drops everything queued (counted as failed) and ends what is in flight: exit or shutdown ran out of time. */
  private giveUp(reason: string): void {
    let dropped = 0;
    for (let i = this.head; i < this.queue.length; i++) {
      const item = this.queue[i];
      if ("flush" in item) item.flush();
      else dropped++;
    }
    this.queue = [];
    this.head = 0;
    this.counts.failed += dropped;
    this.transport.abort();
    this.wakeUp();
    if (this.config.debug || dropped) console.error(`tracerelay: ${reason}; ${dropped} queued trace(s) dropped`);
    this.exitDone();
  }

  private exitDone(): void {
    if (this.exitTimer !== undefined && this.queue.length === this.head && !this.running) {
      clearTimeout(this.exitTimer);
      this.exitTimer = undefined;
    }
  }

  private compact(): void {
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    } else if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
    }
  }

  private async registerRules(): Promise<void> {
    const name = this.config.serviceName;
    if (!name) {
      this.routingRules = "skipped: no serviceName";
      this.warn("rules", "tracerelay: routingRules are registered per service: pass serviceName to init()");
      return;
    }
    const path = `/api/v1/routing/rules/services/${encodeURIComponent(name)}`;
    const body = Buffer.from(JSON.stringify({ rules: this.config.routingRules }));
    const answer = await this.deliver("PUT", path, body, 0);
    if (answer === undefined) this.routingRules = "failed: server unreachable";
    else if (answer.status >= 200 && answer.status < 300) this.routingRules = "registered";
    else if (answer.status === 403) {
      this.routingRules = "refused: 403";
      this.warn("rules", `tracerelay: this API key may not change routing rules (a production key can); routingRules were not registered for ${name}`);
    } else if (answer.status === 404) {
      this.routingRules = "unsupported: 404";
      this.warn("rules", "tracerelay: the server does not accept per-service routing rules (too old?); ignored");
    } else {
      this.routingRules = `refused: ${answer.status}`;
      this.warn("rules", `tracerelay: routingRules were refused (${answer.status}): ${detail(answer)}`);
    }
  }

  /** Each kind of trouble once on stderr (every time with `debug`): a down server must not flood the app's logs. */
  private warn(kind: string, message: string): void {
    if (this.warned.has(kind)) {
      if (this.config.debug) console.error(message);
      return;
    }
    this.warned.add(kind);
    console.error(message);
  }
}

function detail(answer: Answer): string {
  const body = answer.body;
  if (body && typeof body === "object") return String(body.detail ?? body.title ?? JSON.stringify(body)).slice(0, 500);
  return answer.error || "no detail";
}
