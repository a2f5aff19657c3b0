// HTTP to the tracerelay server with Node's own http/https: one kept-alive connection, gzip, no
// retries (the client decides those). Every socket is unref'd: the SDK never keeps a process alive by
// itself; at exit the client holds it with one timer for at most `shutdownTimeout`.
import http from "node:http";
import https from "node:https";
import { gzip } from "node:zlib";
import { VERSION } from "./version.js";

export interface Answer {
  status: number; // 0: no answer (refused, timeout, reset)
  body?: any;
  retryAfter?: number; // ms
  error?: string;
  unreachable?: boolean; // refused or no such host: nobody is listening, waiting will not help now
}

const UNREACHABLE = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL"]);

function gzipped(body: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => gzip(body, { level: 5 }, (err, out) => (err ? reject(err) : resolve(out))));
}

export class Transport {
  private readonly url: URL;
  private readonly agent: http.Agent;
  private readonly inflight = new Set<http.ClientRequest>();
  compress: boolean;

  constructor(
    baseUrl: string,
    private readonly apiKey: string,
    private readonly timeout: number,
    compress: boolean,
  ) {
    this.url = new URL(baseUrl);
    this.compress = compress;
    const Agent = this.url.protocol === "https:" ? https.Agent : http.Agent;
    this.agent = new Agent({ keepAlive: true, maxSockets: 2 });
  }

  async request(method: string, path: string, body: Buffer | null): Promise<Answer> {
    const headers: Record<string, string> = {
      Authorization: `Bearer ${this.apiKey}`,
      "User-Agent": `tracerelay-typescript/${VERSION}`,
      Accept: "application/json",
    };
    let payload = body;
    let compressed = false;
    if (body !== null) {
      headers["Content-Type"] = "application/json";
      if (this.compress && body.length > 512) {
        payload = await gzipped(body);
        headers["Content-Encoding"] = "gzip";
        compressed = true;
      }
    }
    const answer = await this.send(method, path, payload, headers);
    if (compressed && (answer.status === 415 || (answer.status === 400 && !isValidationAnswer(answer)))) {
      // A server without gzip support reads the compressed bytes as broken JSON (400) or an unsupported
      // encoding (415): send the plain body, and plain bodies from then on.
      this.compress = false;
      return this.request(method, path, body);
    }
    return answer;
  }

  private send(method: string, path: string, body: Buffer | null, headers: Record<string, string>): Promise<Answer> {
    return new Promise((resolve) => {
      const lib = this.url.protocol === "https:" ? https : http;
      const prefix = this.url.pathname.replace(/\/+$/, "");
      if (body !== null) headers["Content-Length"] = String(body.length);
      let done = false;
      const finish = (answer: Answer): void => {
        if (!done) {
          done = true;
          this.inflight.delete(req);
          resolve(answer);
        }
      };
      const req = lib.request(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname,
          port: this.url.port || undefined,
          path: prefix + path,
          method,
          headers,
          agent: this.agent,
        },
        (res) => {
          const parts: Buffer[] = [];
          res.on("data", (part: Buffer) => parts.push(part));
          res.on("error", (err) => finish({ status: 0, error: String(err) }));
          res.on("end", () => {
            const raw = Buffer.concat(parts);
            let parsed: unknown;
            if (raw.length && String(res.headers["content-type"] ?? "").includes("json")) {
              try {
                parsed = JSON.parse(raw.toString("utf8"));
              } catch {
                parsed = undefined;
              }
            }
            finish({ status: res.statusCode ?? 0, body: parsed, retryAfter: retryAfter(res.headers["retry-after"]) });
          });
        },
      );
      this.inflight.add(req);
      req.on("socket", (socket) => socket.unref());
      req.setTimeout(this.timeout, () => req.destroy(new Error(`no answer in ${this.timeout} ms`)));
      req.on("error", (err: NodeJS.ErrnoException) => {
        finish({ status: 0, error: `${err.code ?? err.name}: ${err.message}`, unreachable: UNREACHABLE.has(err.code ?? "") });
      });
      req.end(body ?? undefined);
    });
  }

  /** Ends every request in flight (they answer status 0) and the kept-alive connections. */
  abort(): void {
    for (const req of this.inflight) req.destroy(new Error("tracerelay is shutting down"));
    this.agent.destroy();
  }

  close(): void {
    this.agent.destroy();
  }
}

function isValidationAnswer(answer: Answer): boolean {
  return answer.status === 400 && answer.body !== null && typeof answer.body === "object" && Boolean(answer.body.errors);
}

/** Retry-After in milliseconds (delta-seconds or an HTTP date). */
export function retryAfter(value: string | string[] | undefined): number | undefined {
  if (typeof value !== "string" || !value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const when = Date.parse(value);
  return Number.isNaN(when) ? undefined : Math.max(0, when - Date.now());
}
