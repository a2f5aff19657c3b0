// score(): a score or a piece of feedback on a trace or a run, posted at once on its own connection
// (a user's thumbs up is worth waiting a few milliseconds for). Never rejects: a refusal or a network
// failure resolves null with a line on stderr (docs/sdk-typescript.md#scores).
import type { Client } from "./client.js";
import { state } from "./state.js";
import { Transport } from "./transport.js";

export interface ScoreOptions {
  /** The trace (span) to score; give this or `runId`. */
  traceId?: string;
  /** The run to score: the score goes on its root span. Give this or `traceId`. */
  runId?: string;
  /** The score's name (`helpfulness`, `thumbs`): letters, digits, `_`, `.`, `:`, `-`. */
  name: string;
  /** A number (numeric), a boolean (boolean) or a string (a category). */
  value: number | boolean | string;
  comment?: string;
  /** Who scored: `api` unless given (`human`, `eval`, ...). */
  source?: string;
  /** Milliseconds to wait for the answer (default 5000). */
  timeout?: number;
}

export interface Score {
  id: string;
  trace_id: string;
  name: string;
  value: number | boolean | string;
  data_type: "numeric" | "boolean" | "categorical";
  comment: string;
  source: string;
  created_at: string;
}

function warn(message: string): null {
  console.error(`tracerelay.score: ${message}`);
  return null;
}

/** Posts a score; resolves the stored score as the server answered it, or null when it was not stored. */
export async function score(options: ScoreOptions): Promise<Score | null> {
  try {
    const { traceId, runId, name, value } = options ?? ({} as ScoreOptions);
    if ((traceId === undefined) === (runId === undefined)) return warn("give traceId or runId (one of them); not sent");
    if (typeof name !== "string" || value === undefined || value === null) return warn("a score needs a name and a value; not sent");
    if (typeof value === "number" && !Number.isFinite(value)) return warn(`${value} is not a finite number; not sent`);
    const client = state.client as Client | undefined;
    if (client === undefined) return warn(`call init() first; score ${JSON.stringify(name)} not sent`);
    const path =
      traceId !== undefined
        ? `/api/v1/traces/${encodeURIComponent(String(traceId))}/scores`
        : `/api/v1/runs/${encodeURIComponent(String(runId))}/scores`;
    const body: Record<string, unknown> = { name, value };
    if (options.comment !== undefined) body.comment = options.comment;
    if (options.source !== undefined) body.source = options.source;
    const transport = new Transport(client.config.baseUrl, client.config.apiKey, options.timeout ?? 5000, false);
    try {
      const answer = await transport.request("POST", path, Buffer.from(JSON.stringify(body)));
      if (answer.status === 201 && answer.body && typeof answer.body === "object") return answer.body as Score;
      const detail = answer.body?.errors ?? answer.body?.detail ?? answer.error;
      return warn(`the server refused score ${JSON.stringify(name)} (HTTP ${answer.status}): ${JSON.stringify(detail)}`);
    } finally {
      transport.close();
    }
  } catch (error) {
    return warn(`not sent: ${(error as Error).message}`);
  }
}
