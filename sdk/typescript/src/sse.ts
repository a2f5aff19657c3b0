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

const BLANK = Buffer.from("\n\n");
const MARK = Buffer.from('"choices":[]');

/**
 * Hides the usage-only chunk (`"choices":[]` with `usage`) of an OpenAI chat stream from the application
 * when the SDK asked for usage itself: the application reads exactly the events it would have read.
 * Bytes pass through untouched up to the last complete event; a partial event waits for its end (an
 * SSE reader cannot use half an event anyway).
 */
export class UsageChunkFilter {
  private pending: Buffer | undefined;

  push(chunk: Uint8Array): Uint8Array {
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.pending !== undefined) {
      buf = Buffer.concat([this.pending, buf]);
      this.pending = undefined;
    }
    const end = buf.lastIndexOf(BLANK);
    if (end < 0) {
      this.pending = buf;
      return EMPTY;
    }
    const ready = buf.subarray(0, end + 2);
    if (end + 2 < buf.length) this.pending = Buffer.from(buf.subarray(end + 2));
    return ready.indexOf(MARK) < 0 ? ready : dropUsageEvents(ready);
  }

  end(): Uint8Array {
    const rest = this.pending;
    this.pending = undefined;
    if (rest === undefined) return EMPTY;
    return rest.indexOf(MARK) < 0 ? rest : dropUsageEvents(rest);
  }
}

const EMPTY = new Uint8Array(0);

function dropUsageEvents(bytes: Buffer): Buffer {
  const text = bytes.toString("utf8");
  const blocks = text.split("\n\n");
  const kept = blocks.filter((block) => !isUsageOnly(block));
  return kept.length === blocks.length ? bytes : Buffer.from(kept.join("\n\n"));
}

function isUsageOnly(block: string): boolean {
  if (!block.includes('"choices":[]')) return false;
  const data = block
    .split("\n")
    .filter((line) => line.startsWith("data:"))
    .map((line) => line.slice(line[5] === " " ? 6 : 5))
    .join("\n");
  try {
    const value = JSON.parse(data);
    return Array.isArray(value?.choices) && value.choices.length === 0 && value.usage != null;
  } catch {
    return false;
  }
}
