// Server-sent events: the stream's bytes as they came → the JSON payload of each `data:` event, with
// the time its last byte arrived. Runs off the call's path, when the trace is built.

export interface SseEvent {
  at: number; // performance.now() when the event was complete
  data: any;
}

export function parseEvents(chunks: Uint8Array[], times: number[]): SseEvent[] {
  const decoder = new TextDecoder();
  const out: SseEvent[] = [];
  let buffer = "";
  const take = (block: string, at: number): void => {
    const data: string[] = [];
    for (const line of block.split(/\r\n|\r|\n/)) {
      if (line.startsWith("data:")) data.push(line.slice(line[5] === " " ? 6 : 5));
    }
    if (!data.length) return;
    const text = data.join("\n");
    if (text === "[DONE]") return;
    try {
      out.push({ at, data: JSON.parse(text) });
    } catch {
      // not JSON: nothing to read usage or content from
    }
  };
  for (let i = 0; i < chunks.length; i++) {
    buffer += decoder.decode(chunks[i], { stream: true });
    let cut: RegExpExecArray | null;
    const blank = /\r\n\r\n|\n\n|\r\r/g;
    let start = 0;
    while ((cut = blank.exec(buffer)) !== null) {
      take(buffer.slice(start, cut.index), times[i]);
      start = cut.index + cut[0].length;
    }
    buffer = buffer.slice(start);
  }
  buffer += decoder.decode();
  if (buffer.trim()) take(buffer, times[times.length - 1] ?? 0);
  return out;
}

const NL = 10;
const CR = 13;
const MARK = Buffer.from('"choices":[]');

/** Whether `bytes` contains `"choices":[]` (found by its `[]`, then checked backwards). */
function hasMark(bytes: Uint8Array, from = 0): boolean {
  for (let i = Math.max(from, MARK.length - 1); i < bytes.length; i++) {
    if (bytes[i] !== 93 || bytes[i - 1] !== 91) continue; // "]" after "["
    let j = MARK.length - 1;
    let k = i;
    while (j >= 0 && bytes[k] === MARK[j]) {
      j--;
      k--;
    }
    if (j < 0) return true;
  }
  return false;
}

/** The index just past the last blank line ("\n\n" or "\r\n\r\n") in `bytes`, or -1. */
function lastEventEnd(bytes: Uint8Array): number {
  for (let i = bytes.length - 1; i > 0; i--) {
    if (bytes[i] === NL && (bytes[i - 1] === NL || (bytes[i - 1] === CR && bytes[i - 2] === NL))) return i + 1;
  }
  return -1;
}

/**
 * Hides the usage-only chunk (`"choices":[]` with `usage`) of an OpenAI chat stream from the application
 * when the SDK asked for usage itself: the application reads exactly the events it would have read.
 * Bytes pass through untouched up to the last complete event; a partial event waits for its end (an
 * SSE reader cannot use half an event anyway). A chunk of whole events without the mark (all of them but
 * the usage one) is handed on as it is, after two scans of its bytes.
 */
export class UsageChunkFilter {
  private pending: Uint8Array | undefined;

  push(chunk: Uint8Array): Uint8Array {
    let buf = chunk;
    if (this.pending !== undefined) {
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = undefined;
    }
    const end = lastEventEnd(buf);
    if (end < 0) {
      this.pending = buf;
      return EMPTY;
    }
    const ready = end === buf.length ? buf : buf.subarray(0, end);
    if (end < buf.length) this.pending = buf.slice(end);
    return hasMark(ready) ? dropUsageEvents(ready) : ready;
  }

  end(): Uint8Array {
    const rest = this.pending;
    this.pending = undefined;
    if (rest === undefined) return EMPTY;
    return hasMark(rest) ? dropUsageEvents(rest) : rest;
  }
}

const EMPTY = new Uint8Array(0);

function dropUsageEvents(bytes: Uint8Array): Uint8Array {
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
  const parts = text.split(/(\r?\n\r?\n)/); // events and the blank lines after them, alternately
  let kept = "";
  let dropped = false;
  for (let i = 0; i < parts.length; i += 2) {
    if (isUsageOnly(parts[i])) dropped = true;
    else kept += parts[i] + (parts[i + 1] ?? "");
  }
  return dropped ? Buffer.from(kept) : bytes;
}

// A quote inside a JSON string is escaped, so these bytes can only be the chunk's own keys: an empty
// `choices` and a `usage` object (every other chunk of such a stream has `"usage":null`).
function isUsageOnly(block: string): boolean {
  return block.includes('"choices":[]') && block.includes('"usage":{');
}
