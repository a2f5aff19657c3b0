// BLAKE2b (RFC 7693) with a chosen digest length, unkeyed: the hash the server and the Python SDK sample
// with (`hashlib.blake2b(id, digest_size=8)`). Node's crypto offers BLAKE2b only with a 64-byte digest,
// and the digest length is a parameter of the hash (not a truncation), so it is computed here, on
// 32-bit halves (no BigInt: this runs once per trace when sampling is on).

const IV = new Uint32Array([
  0xf3bcc908, 0x6a09e667, 0x84caa73b, 0xbb67ae85, 0xfe94f82b, 0x3c6ef372, 0x5f1d36f1, 0xa54ff53a,
  0xade682d1, 0x510e527f, 0x2b3e6c1f, 0x9b05688c, 0xfb41bd6b, 0x1f83d9ab, 0x137e2179, 0x5be0cd19,
]); // little end first: [lo, hi] per 64-bit word

const SIGMA = [
  [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
  [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
  [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
  [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
  [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
  [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
  [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
  [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
  [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
  [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
];

const v = new Uint32Array(32);
const m = new Uint32Array(32);

// v[a] += v[b] (64-bit, as lo/hi pairs at 2a, 2a+1)
function add(a: number, b: number): void {
  const lo = v[2 * a] + v[2 * b];
  let hi = v[2 * a + 1] + v[2 * b + 1];
  if (lo >= 0x100000000) hi++;
  v[2 * a] = lo;
  v[2 * a + 1] = hi;
}

function addM(a: number, i: number): void {
  const lo = v[2 * a] + m[2 * i];
  let hi = v[2 * a + 1] + m[2 * i + 1];
  if (lo >= 0x100000000) hi++;
  v[2 * a] = lo;
  v[2 * a + 1] = hi;
}

// v[d] = rotr64(v[d] ^ v[a], n)
function xorRot(d: number, a: number, n: number): void {
  const lo = v[2 * d] ^ v[2 * a];
  const hi = v[2 * d + 1] ^ v[2 * a + 1];
  if (n === 32) {
    v[2 * d] = hi;
    v[2 * d + 1] = lo;
  } else if (n < 32) {
    v[2 * d] = (lo >>> n) | (hi << (32 - n));
    v[2 * d + 1] = (hi >>> n) | (lo << (32 - n));
  } else {
    const k = n - 32;
    v[2 * d] = (hi >>> k) | (lo << (32 - k));
    v[2 * d + 1] = (lo >>> k) | (hi << (32 - k));
  }
}

function mix(a: number, b: number, c: number, d: number, x: number, y: number): void {
  add(a, b);
  addM(a, x);
  xorRot(d, a, 32);
  add(c, d);
  xorRot(b, c, 24);
  add(a, b);
  addM(a, y);
  xorRot(d, a, 16);
  add(c, d);
  xorRot(b, c, 63);
}

function compress(h: Uint32Array, block: Uint8Array, offset: number, count: number, last: boolean): void {
  for (let i = 0; i < 16; i++) {
    v[i] = h[i];
    v[i + 16] = IV[i];
  }
  v[24] ^= count >>> 0; // t0 (counts below 2^53 bytes: the high word of t stays 0 here)
  v[25] ^= Math.floor(count / 0x100000000);
  if (last) {
    v[28] = ~v[28];
    v[29] = ~v[29];
  }
  for (let i = 0; i < 32; i++) {
    const p = offset + 4 * i;
    m[i] = block[p] | (block[p + 1] << 8) | (block[p + 2] << 16) | (block[p + 3] << 24);
  }
  for (let r = 0; r < 12; r++) {
    const s = SIGMA[r % 10];
    mix(0, 4, 8, 12, s[0], s[1]);
    mix(1, 5, 9, 13, s[2], s[3]);
    mix(2, 6, 10, 14, s[4], s[5]);
    mix(3, 7, 11, 15, s[6], s[7]);
    mix(0, 5, 10, 15, s[8], s[9]);
    mix(1, 6, 11, 12, s[10], s[11]);
    mix(2, 7, 8, 13, s[12], s[13]);
    mix(3, 4, 9, 14, s[14], s[15]);
  }
  for (let i = 0; i < 16; i++) h[i] ^= v[i] ^ v[i + 16];
}

/** BLAKE2b of `data` with a digest of `size` bytes (1..64), no key. */
export function blake2b(data: Uint8Array, size: number): Uint8Array {
  const h = new Uint32Array(IV);
  h[0] ^= 0x01010000 ^ size; // parameter block: digest length, key length 0, fanout 1, depth 1
  const full = Math.max(0, Math.ceil(data.length / 128) - 1); // every block but the last
  for (let i = 0; i < full; i++) compress(h, data, i * 128, (i + 1) * 128, false);
  const tail = new Uint8Array(128);
  tail.set(data.subarray(full * 128));
  compress(h, tail, 0, data.length, true);
  const out = new Uint8Array(size);
  for (let i = 0; i < size; i++) out[i] = (h[i >> 2] >>> (8 * (i & 3))) & 0xff;
  return out;
}
