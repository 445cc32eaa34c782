// A QR Code encoder (ISO/IEC 18004) for payment URIs: byte mode, error correction
// level M, versions 1 to 10 (up to 213 bytes of UTF-8), the mask with the lowest
// penalty. encodeQr(text) -> { version, size, mask, dark(x, y) }; qrSvgPath(qr)
// draws it as one SVG path (with the 4-module quiet zone) for a CSP-safe <svg>.

// Per version: [EC codewords per block, [blocks, data codewords per block], ...].
const EC_M = [
  null,
  [10, [1, 16]],
  [16, [1, 28]],
  [26, [1, 44]],
  [18, [2, 32]],
  [24, [2, 43]],
  [16, [4, 27]],
  [18, [4, 31]],
  [22, [2, 38], [2, 39]],
  [22, [3, 36], [2, 37]],
  [26, [4, 43], [1, 44]],
];
const ALIGNMENT = [null, [], [6, 18], [6, 22], [6, 26], [6, 30], [6, 34],
  [6, 22, 38], [6, 24, 42], [6, 26, 46], [6, 28, 50]];
export const MAX_VERSION = 10;

// GF(256) with the QR polynomial x^8 + x^4 + x^3 + x^2 + 1.
const EXP = new Uint8Array(512);
const LOG = new Uint8Array(256);
for (let i = 0, x = 1; i < 255; i++) {
  EXP[i] = x;
  LOG[x] = i;
  x <<= 1;
  if (x & 0x100) x ^= 0x11d;
}
for (let i = 255; i < 512; i++) EXP[i] = EXP[i - 255];
const mul = (a, b) => (a && b ? EXP[LOG[a] + LOG[b]] : 0);

function generator(degree) {
  let poly = [1];
  for (let i = 0; i < degree; i++) {
    const next = new Array(poly.length + 1).fill(0);
    for (let j = 0; j < poly.length; j++) {
      next[j] ^= poly[j];
      next[j + 1] ^= mul(poly[j], EXP[i]);
    }
    poly = next;
  }
  return poly;
}

function errorCorrection(data, degree) {
  const gen = generator(degree);
  const rem = new Array(degree).fill(0);
  for (const byte of data) {
    const factor = byte ^ rem.shift();
    rem.push(0);
    for (let i = 0; i < degree; i++) rem[i] ^= mul(gen[i + 1], factor);
  }
  return rem;
}

const dataCodewords = (v) => EC_M[v].slice(1).reduce((n, [b, d]) => n + b * d, 0);
const countBits = (v) => (v < 10 ? 8 : 16);

function codewords(bytes, version) {
  const capacity = dataCodewords(version) * 8;
  const bits = [];
  const put = (value, n) => {
    for (let i = n - 1; i >= 0; i--) bits.push((value >>> i) & 1);
  };
  put(0b0100, 4);
  put(bytes.length, countBits(version));
  for (const b of bytes) put(b, 8);
  put(0, Math.min(4, capacity - bits.length));
  while (bits.length % 8) bits.push(0);
  for (let pad = 0xec; bits.length < capacity; pad ^= 0xec ^ 0x11) put(pad, 8);
  const data = [];
  for (let i = 0; i < bits.length; i += 8) {
    data.push(bits.slice(i, i + 8).reduce((n, bit) => (n << 1) | bit, 0));
  }
  const [ecLength, ...groups] = EC_M[version];
  const blocks = [];
  let at = 0;
  for (const [count, length] of groups) {
    for (let i = 0; i < count; i++) {
      const block = data.slice(at, at + length);
      blocks.push([block, errorCorrection(block, ecLength)]);
      at += length;
    }
  }
  const out = [];
  const longest = Math.max(...blocks.map(([d]) => d.length));
  for (let i = 0; i < longest; i++) for (const [d] of blocks) if (i < d.length) out.push(d[i]);
  for (let i = 0; i < ecLength; i++) for (const [, ec] of blocks) out.push(ec[i]);
  return out;
}

const MASKS = [
  (x, y) => (x + y) % 2 === 0,
  (x, y) => y % 2 === 0,
  (x) => x % 3 === 0,
  (x, y) => (x + y) % 3 === 0,
  (x, y) => (Math.floor(x / 3) + Math.floor(y / 2)) % 2 === 0,
  (x, y) => ((x * y) % 2) + ((x * y) % 3) === 0,
  (x, y) => (((x * y) % 2) + ((x * y) % 3)) % 2 === 0,
  (x, y) => (((x + y) % 2) + ((x * y) % 3)) % 2 === 0,
];

class Grid {
  constructor(version) {
    this.size = 17 + 4 * version;
    this.dark = new Uint8Array(this.size * this.size);
    this.fixed = new Uint8Array(this.size * this.size);
  }
  get(x, y) {
    return this.dark[y * this.size + x] === 1;
  }
  set(x, y, dark, fixed = true) {
    this.dark[y * this.size + x] = dark ? 1 : 0;
    if (fixed) this.fixed[y * this.size + x] = 1;
  }
}

function drawFunctionPatterns(grid, version) {
  const n = grid.size;
  for (let i = 0; i < n; i++) {
    grid.set(6, i, i % 2 === 0);
    grid.set(i, 6, i % 2 === 0);
  }
  for (const [cx, cy] of [[3, 3], [n - 4, 3], [3, n - 4]]) {
    for (let dy = -4; dy <= 4; dy++) {
      for (let dx = -4; dx <= 4; dx++) {
        const x = cx + dx;
        const y = cy + dy;
        if (x < 0 || y < 0 || x >= n || y >= n) continue;
        const ring = Math.max(Math.abs(dx), Math.abs(dy));
        grid.set(x, y, ring !== 2 && ring !== 4);
      }
    }
  }
  const centres = ALIGNMENT[version];
  const last = centres.length - 1;
  centres.forEach((cy, i) => centres.forEach((cx, j) => {
    if ((i === 0 && j === 0) || (i === 0 && j === last) || (i === last && j === 0)) return;
    for (let dy = -2; dy <= 2; dy++) {
      for (let dx = -2; dx <= 2; dx++) grid.set(cx + dx, cy + dy, Math.max(Math.abs(dx), Math.abs(dy)) !== 1);
    }
  }));
  drawFormat(grid, 0); // reserves the format areas; redrawn per mask
  if (version >= 7) {
    let rem = version;
    for (let i = 0; i < 12; i++) rem = (rem << 1) ^ ((rem >>> 11) * 0x1f25);
    const bits = (version << 12) | rem;
    for (let i = 0; i < 18; i++) {
      const bit = ((bits >>> i) & 1) === 1;
      const a = n - 11 + (i % 3);
      const b = Math.floor(i / 3);
      grid.set(a, b, bit);
      grid.set(b, a, bit);
    }
  }
}

function drawFormat(grid, mask) {
  const n = grid.size;
  const data = mask; // level M is 00
  let rem = data;
  for (let i = 0; i < 10; i++) rem = (rem << 1) ^ ((rem >>> 9) * 0x537);
  const bits = ((data << 10) | rem) ^ 0x5412;
  const bit = (i) => ((bits >>> i) & 1) === 1;
  for (let i = 0; i <= 5; i++) grid.set(8, i, bit(i));
  grid.set(8, 7, bit(6));
  grid.set(8, 8, bit(7));
  grid.set(7, 8, bit(8));
  for (let i = 9; i < 15; i++) grid.set(14 - i, 8, bit(i));
  for (let i = 0; i < 8; i++) grid.set(n - 1 - i, 8, bit(i));
  for (let i = 8; i < 15; i++) grid.set(8, n - 15 + i, bit(i));
  grid.set(8, n - 8, true);
}

function placeData(grid, words) {
  const n = grid.size;
  let i = 0;
  const total = words.length * 8;
  for (let right = n - 1; right >= 1; right -= 2) {
    if (right === 6) right = 5;
    const upward = ((right + 1) & 2) === 0;
    for (let step = 0; step < n; step++) {
      const y = upward ? n - 1 - step : step;
      for (let j = 0; j < 2; j++) {
        const x = right - j;
        if (grid.fixed[y * n + x]) continue;
        const dark = i < total && ((words[i >>> 3] >>> (7 - (i & 7))) & 1) === 1;
        grid.set(x, y, dark, false);
        i++;
      }
    }
  }
}

function applyMask(grid, mask) {
  const n = grid.size;
  const test = MASKS[mask];
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      if (!grid.fixed[y * n + x] && test(x, y)) grid.dark[y * n + x] ^= 1;
    }
  }
}

const FINDER_LIKE = [[1, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 0, 1, 1, 1, 0, 1]];

function penalty(grid) {
  const n = grid.size;
  let score = 0;
  let dark = 0;
  for (let pass = 0; pass < 2; pass++) {
    for (let a = 0; a < n; a++) {
      const line = [];
      for (let b = 0; b < n; b++) line.push(pass ? grid.dark[b * n + a] : grid.dark[a * n + b]);
      let run = 1;
      for (let b = 1; b <= n; b++) {
        if (b < n && line[b] === line[b - 1]) {
          run++;
        } else {
          if (run >= 5) score += run - 2;
          run = 1;
        }
      }
      for (let b = 0; b + 11 <= n; b++) {
        for (const pattern of FINDER_LIKE) {
          if (pattern.every((v, k) => line[b + k] === v)) score += 40;
        }
      }
    }
  }
  for (let y = 0; y < n; y++) {
    for (let x = 0; x < n; x++) {
      const v = grid.dark[y * n + x];
      dark += v;
      if (x < n - 1 && y < n - 1 && v === grid.dark[y * n + x + 1]
        && v === grid.dark[(y + 1) * n + x] && v === grid.dark[(y + 1) * n + x + 1]) score += 3;
    }
  }
  const total = n * n;
  score += Math.floor(Math.abs(dark * 20 - total * 10) / total) * 10;
  return score;
}

export function encodeQr(text, { mask = null } = {}) {
  const bytes = new TextEncoder().encode(text);
  let version = 1;
  while (version <= MAX_VERSION && 4 + countBits(version) + 8 * bytes.length > dataCodewords(version) * 8) {
    version++;
  }
  if (version > MAX_VERSION) throw new RangeError(`too long for a QR code here: ${bytes.length} bytes`);
  const grid = new Grid(version);
  drawFunctionPatterns(grid, version);
  placeData(grid, codewords(bytes, version));
  let chosen = mask;
  if (chosen === null) {
    let best = Infinity;
    for (let m = 0; m < 8; m++) {
      applyMask(grid, m);
      drawFormat(grid, m);
      const score = penalty(grid);
      if (score < best) {
        best = score;
        chosen = m;
      }
      applyMask(grid, m);
    }
  }
  applyMask(grid, chosen);
  drawFormat(grid, chosen);
  return { version, size: grid.size, mask: chosen, dark: (x, y) => grid.get(x, y) };
}

export function qrSvgPath(qr, quiet = 4) {
  let d = '';
  for (let y = 0; y < qr.size; y++) {
    for (let x = 0; x < qr.size; x++) if (qr.dark(x, y)) d += `M${x + quiet} ${y + quiet}h1v1h-1z`;
  }
  return { d, extent: qr.size + 2 * quiet };
}
