// Trace ids and the sampling point, the same functions as the Python SDK's and the server's
// (`sdk/python/src/tracerelay/_ids.py`, `routing/router.py`).
import { randomFillSync } from "node:crypto";
import { blake2b } from "./blake2b.js";

const HEX: string[] = [];
for (let i = 0; i < 256; i++) HEX.push(i.toString(16).padStart(2, "0"));
const POOL = new Uint8Array(10 * 256);
let poolAt = POOL.length;

/**
 * `trc_` + a UUIDv7 in hex (48 bits of Unix milliseconds, version 7, the RFC 9562 variant, random bits).
 * Chosen here, not by the server, so a batch sent again after a lost answer stores nothing twice and
 * a span's children can name it before it ends.
 */
export function newTraceId(): string {
  if (poolAt === POOL.length) {
    randomFillSync(POOL);
    poolAt = 0;
  }
  const r = POOL.subarray(poolAt, poolAt + 10);
  poolAt += 10;
  const ms = Date.now();
  let out = "trc_" + Math.floor(ms / 0x100000000).toString(16).padStart(4, "0").slice(-4);
  out += (ms >>> 0).toString(16).padStart(8, "0");
  out += "7" + (r[0] & 0x0f).toString(16) + HEX[r[1]]; // version 7, then 12 random bits
  out += HEX[(r[2] & 0x3f) | 0x80] + HEX[r[3]]; // variant 10xx, then 14 random bits
  for (let i = 4; i < 10; i++) out += HEX[r[i]];
  return out;
}

const encoder = new TextEncoder();

/** A number in [0, 1) fixed by the id: blake2b(id, 8 bytes) read big-endian, over 2^64 (as Python divides). */
export function samplePoint(id: string): number {
  const d = blake2b(encoder.encode(id), 8);
  const hi = ((d[0] << 24) | (d[1] << 16) | (d[2] << 8) | d[3]) >>> 0;
  const lo = ((d[4] << 24) | (d[5] << 16) | (d[6] << 8) | d[7]) >>> 0;
  // hi * 2^32 is exact and the sum rounds once to the nearest double, as Python's int / 2**64 does.
  return (hi * 0x100000000 + lo) / 18446744073709551616;
}
