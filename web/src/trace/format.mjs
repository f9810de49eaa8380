// The vmemlab trace format (wasm-core/docs/replay.md, "The trace format") in plain
// JavaScript, for the page (the header shown before a replay) and the class server (an
// uploaded trace checked from prefix to end record before it is stored). The engine
// (wasm-core/src/trace.c) stays the page's authority on what a trace holds; this reader
// is written apart from it, so the server need not run the engine. Messages are English
// and say what is wrong: the server sends them as they are, the page shows them after a
// translated sentence.

export const MAGIC = [0x89, 0x56, 0x4d, 0x54, 0x52, 0x43, 0x0d, 0x0a]; // \x89VMTRC\r\n
export const VERSION = 1;
export const PREFIX_BYTES = 16;
export const HEADER_MAX = 65536;
export const MAX_ACCESSES = 4_000_000_000;

export class TraceFormatError extends Error {
  /** @param {'not-trace'|'version'|'truncated'|'corrupt'|'oversized'} kind */
  constructor(kind, message) { super(message); this.name = 'TraceFormatError'; this.kind = kind; }
}

const fail = (kind, message) => { throw new TraceFormatError(kind, message); };

const wholeNumber = (v, max) => Number.isSafeInteger(v) && v >= 0 && v <= max;

/**
 * The prefix and header of a trace from its first bytes (at least 16 + the header's length).
 * @param {Uint8Array} bytes  @param {number} [fileSize] the whole file's length, when known
 * @returns {{ header: any, bodyOffset: number }}
 */
export function readHeader(bytes, fileSize) {
  if (bytes.length < PREFIX_BYTES) fail('not-trace', `the file is ${bytes.length} bytes long, shorter than the 16-byte prefix of a trace: not a vmemlab trace`);
  if (!MAGIC.every((b, i) => bytes[i] === b)) {
    if (bytes[0] === 0x1f && bytes[1] === 0x8b) fail('not-trace', 'this is a plain gzip file, not a vmemlab trace (a trace starts with its own prefix and header)');
    if (bytes[0] === 0x7b) fail('not-trace', 'this is a JSON file, not a vmemlab trace: give a .vmtrace file that hw-lab/run trace wrote');
    fail('not-trace', 'not a vmemlab trace: the file does not start with the trace prefix; record one with hw-lab/run trace');
  }
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = dv.getUint16(8, true), reserved = dv.getUint16(10, true), hlen = dv.getUint32(12, true);
  if (version !== VERSION) fail('version', `this trace is format version ${version}; this vmemlab reads version ${VERSION} (record the trace again with this vmemlab's hw-lab/run trace)`);
  if (reserved !== 0 || hlen === 0 || hlen > HEADER_MAX) fail('corrupt', `the trace prefix is corrupt (header length ${hlen}, reserved field ${reserved}): the file is damaged`);
  if (bytes.length < PREFIX_BYTES + hlen) {
    if (fileSize !== undefined && fileSize < PREFIX_BYTES + hlen) fail('truncated', `the trace is truncated: its header is ${hlen} bytes, the file ends before it does`);
    fail('truncated', `the trace header is ${hlen} bytes; read at least ${PREFIX_BYTES + hlen} bytes of the file`);
  }
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(PREFIX_BYTES, PREFIX_BYTES + hlen)));
  } catch (e) { fail('corrupt', `the trace header is not valid JSON (${e.message}): the file is corrupt`); }
  checkHeader(header);
  const bodyOffset = PREFIX_BYTES + hlen;
  if (fileSize !== undefined && fileSize !== bodyOffset + header.body.bytes) {
    fail(fileSize < bodyOffset + header.body.bytes ? 'truncated' : 'corrupt',
      `the trace is ${fileSize < bodyOffset + header.body.bytes ? 'truncated' : 'corrupt'}: its header announces a ${header.body.bytes}-byte body, the file holds ${fileSize - bodyOffset} bytes after the header`);
  }
  return { header, bodyOffset };
}

/** The header fields a replay relies on (the JSON Schema, hw-lab/schema/trace.schema.json, says the rest). */
export function checkHeader(h) {
  if (!h || typeof h !== 'object' || Array.isArray(h)) fail('corrupt', 'the trace header is not a JSON object: the file is corrupt');
  if (h.format !== 'vmemlab-trace') fail('not-trace', 'the trace header\'s "format" is not "vmemlab-trace": not a vmemlab trace');
  if (h.version !== VERSION) fail('version', `the trace header says format version ${JSON.stringify(h.version)}; this vmemlab reads version ${VERSION}`);
  if (h.page_size !== 4096) fail('corrupt', 'the trace header\'s "page_size" must be 4096 in version 1');
  if (typeof h.program !== 'string' || !h.program) fail('corrupt', 'the trace header has no "program": the file is corrupt');
  if (!Array.isArray(h.args) || !h.args.every((a) => typeof a === 'string')) fail('corrupt', 'the trace header\'s "args" must be an array of strings');
  if (!wholeNumber(h.accesses, MAX_ACCESSES)) fail('corrupt', 'the trace header\'s "accesses" must be a whole number');
  if (!wholeNumber(h.pages, 2 ** 35)) fail('corrupt', 'the trace header\'s "pages" must be a whole number');
  const c = h.counts ?? {};
  if (!['load', 'store', 'fetch', 'modify'].every((k) => wholeNumber(c[k], MAX_ACCESSES))) fail('corrupt', 'the trace header\'s "counts" must give load, store, fetch and modify');
  if (c.load + c.store + c.fetch + c.modify !== h.accesses) fail('corrupt', 'the trace header\'s counts do not add up to its "accesses": the file is corrupt');
  if (typeof h.partial !== 'boolean') fail('corrupt', 'the trace header has no "partial" (true or false)');
  if (h.partial && typeof h.partial_reason !== 'string') fail('corrupt', 'the trace header marks the trace partial without a "partial_reason"');
  if (!h.body || h.body.compression !== 'gzip' || !wholeNumber(h.body.bytes, 2 ** 48)) fail('corrupt', 'the trace header\'s "body" must be {"compression": "gzip", "bytes": N}');
}

const CODE_ESCAPE = 30, CODE_CONTROL = 31;
/** The most bytes one access record takes (a tag and two 10-byte varints); the end record
 * takes at most 11. A body inflates to at most ACCESS_MAX_BYTES * accesses + END_MAX_BYTES. */
export const ACCESS_MAX_BYTES = 21;
export const END_MAX_BYTES = 11;
const NAMES = ['load', 'store', 'fetch', 'modify'];

/**
 * The distinct page numbers of a body, in one Float64Array (open addressing, each page
 * stored plus one so that 0 marks an empty slot): 8 bytes a slot where a Set of numbers
 * takes several times that, so a trace touching millions of pages stays a few tens of MB.
 */
class PageSet {
  constructor() { this.bits = 12; this.slots = new Float64Array(1 << this.bits); this.size = 0; }
  /** Adds page p (a whole number below 2^52). */
  add(p) {
    const v = p + 1;
    const mask = this.slots.length - 1;
    // the low and high 32 bits, mixed (a double below 2^53 is exact in both halves)
    let h = Math.imul((v >>> 0) ^ Math.imul(Math.floor(v / 4294967296), 0x85ebca6b), 0x9e3779b1) >>> (32 - this.bits);
    for (;;) {
      const x = this.slots[h];
      if (x === v) return;
      if (x === 0) break;
      h = (h + 1) & mask;
    }
    this.slots[h] = v;
    if (++this.size * 2 > this.slots.length) this.grow();
  }
  grow() {
    const old = this.slots;
    this.bits++;
    this.slots = new Float64Array(1 << this.bits);
    this.size = 0;
    for (let i = 0; i < old.length; i++) if (old[i] !== 0) this.add(old[i] - 1);
  }
}

/**
 * Checks an uncompressed body against its header as it streams by: push() the body in
 * chunks of any size (a record may straddle two), then end(). Every record well formed,
 * offsets inside their page, the end record last and counting what came before, the
 * counts and the distinct pages the header announces. It stops at the first problem,
 * including as soon as the body holds more accesses or touches more pages than the header
 * says, so it never holds more than a record of the body and the header's pages.
 * end() returns the counts it found; every problem is a TraceFormatError.
 */
export class BodyChecker {
  /** @param {any} header a header readHeader accepted */
  constructor(header) {
    this.header = header;
    // Numbers, not BigInts: a page number below 2^52 and its deltas are exact in a double.
    this.page = [0, 0]; this.off = [0, 0]; this.lastPage = [-1, -1];
    this.counts = [0, 0, 0, 0];
    this.pages = new PageSet();
    this.n = 0;
    this.ended = false;          // the end record was read
    this.carry = null;           // the bytes of a record the last chunk cut short
  }

  /** @param {Uint8Array} chunk */
  push(chunk) {
    if (chunk.length === 0) return;
    let raw = chunk;
    if (this.carry) {
      raw = new Uint8Array(this.carry.length + chunk.length);
      raw.set(this.carry); raw.set(chunk, this.carry.length);
      this.carry = null;
    }
    const stop = this.walk(raw, false);
    if (stop < raw.length) this.carry = raw.slice(stop);
  }

  /** The body is complete: the last checks; returns { accesses, pages, counts }. */
  end() {
    if (this.carry) { const rest = this.carry; this.carry = null; this.walk(rest, true); }
    const { header, n, counts } = this;
    if (!this.ended) fail('truncated', `the trace is truncated: its body stops after ${n} accesses without the end record`);
    if (n !== header.accesses) fail('corrupt', `the trace is corrupt: its header announces ${header.accesses} accesses, its body holds ${n}`);
    NAMES.forEach((k, j) => { if (counts[j] !== header.counts[k]) fail('corrupt', `the trace is corrupt: its header counts ${header.counts[k]} ${k}s, its body holds ${counts[j]}`); });
    if (this.pages.size !== header.pages) fail('corrupt', `the trace is corrupt: its header announces ${header.pages} distinct pages, its body touches ${this.pages.size}`);
    return { accesses: n, pages: this.pages.size, counts: Object.fromEntries(NAMES.map((k, j) => [k, counts[j]])) };
  }

  /** Reads the records of raw; unless final, stops before a record that may not be whole
   * (fewer than ACCESS_MAX_BYTES left) and returns where, for the next chunk to finish. */
  walk(raw, final) {
    const { page, off, lastPage, counts, pages } = this;
    const accesses = this.header.accesses, maxPages = this.header.pages;
    const len = raw.length;
    const safe = final ? len : len - ACCESS_MAX_BYTES;
    let i = 0, n = this.n, ended = this.ended;
    const varint = () => {
      let v = 0, mul = 1;
      for (let k = 0; k < 8; k++) {
        if (i >= len) fail('truncated', `the trace is truncated: its body stops inside access ${n + 1}`);
        const b = raw[i++];
        v += (b & 0x7f) * mul;
        mul *= 128;
        if (!(b & 0x80)) return v;
      }
      fail('corrupt', `the trace is corrupt: a number too large for an address in access ${n + 1}`);
    };
    const unzigzag = (v) => (v % 2 ? -(v + 1) / 2 : v / 2);
    while (i < len) {
      if (ended) fail('corrupt', 'the trace is corrupt: data follows its end record');
      if (i > safe) break;
      const tag = raw[i++];
      const code = tag >> 3;
      if (code === CODE_CONTROL) {
        if (tag & 7) fail('corrupt', `the trace is corrupt: unknown record type 0x${tag.toString(16).padStart(2, '0')}`);
        const total = varint();
        if (total !== n) fail('corrupt', `the trace is corrupt: its end record counts ${total} accesses where the body holds ${n}`);
        ended = true;
        continue;
      }
      const kind = tag & 3, s = kind === 2 ? 1 : 0;
      if (tag & 4) {
        page[s] += unzigzag(varint());
        if (page[s] < 0 || page[s] >= 2 ** 52) fail('corrupt', `the trace is corrupt: access ${n + 1} is outside the address space`);
      }
      off[s] += code === CODE_ESCAPE ? unzigzag(varint()) : unzigzag(code);
      if (off[s] < 0 || off[s] >= 4096) fail('corrupt', `the trace is corrupt: access ${n + 1} has a page offset of ${off[s]}`);
      if (page[s] !== lastPage[s]) {
        pages.add(page[s]); lastPage[s] = page[s];
        if (pages.size > maxPages) fail('corrupt', `the trace is corrupt: its body touches more than the ${maxPages} distinct pages its header announces`);
      }
      counts[kind]++;
      n++;
      if (n > accesses) fail('corrupt', `the trace is corrupt: its body holds more than the ${accesses} accesses its header announces`);
    }
    this.n = n; this.ended = ended;
    return i;
  }
}

/**
 * Walks a whole uncompressed body and checks it against its header (BodyChecker in one
 * chunk). Returns the counts it found.
 * @param {Uint8Array} raw  @param {any} header
 */
export function checkBody(raw, header) {
  const c = new BodyChecker(header);
  c.push(raw);
  return c.end();
}
