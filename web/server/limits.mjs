// What the class server refuses before anything reaches a store, the same for SQLite and
// PostgreSQL: JSON that is not I-JSON (RFC 7493: a name twice in one object, a number no
// 64-bit float holds, an unpaired surrogate), nesting deeper than MAX_DEPTH, control
// characters in text, malformed Idempotency-Key and X-Vmemlab-Name headers, and request
// bodies that arrive too slowly. Each refusal says where (a JSON Pointer) and what to do.

export const MAX_DEPTH = 32;
export const NAME_MAX = 60;
const KEY_RE = /^[A-Za-z0-9_-]{8,128}$/;

/** application/json or any application/<something>+json, with or without parameters
 * (Fastify hands parsers the type as `type/subtype; key="value"`). The bytes must be
 * UTF-8 whatever a charset parameter says (RFC 8259 section 8.1). */
export const JSON_TYPE = /^application\/(?:[a-z0-9!#$&^_.-]+\+)?json(?:;|$)/;

export class Refusal extends Error {
  constructor(statusCode, message) { super(message); this.statusCode = statusCode; }
}

const pointer = (stack) => stack.map((f) => '/' + String(f.type === 'arr' ? f.index : f.key).replace(/~/g, '~0').replace(/\//g, '~1')).join('');
const hex = (c) => 'U+' + c.toString(16).toUpperCase().padStart(4, '0');

/* C0 and C1 control characters and DEL; tab, line feed and carriage return are allowed in
 * values (notes and command lines hold them), never in names. Bidirectional overrides and
 * isolates would let a display name read differently from what it is. */
const CONTROL_IN_VALUE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const CONTROL_IN_NAME = /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** What is wrong with one piece of text, or null. */
export function textProblem(s, { name = false } = {}) {
  const m = (name ? CONTROL_IN_NAME : CONTROL_IN_VALUE).exec(s);
  if (m) return `contains the control character ${hex(m[0].charCodeAt(0))}; text may not hold control characters${name ? '' : ' (tab and line breaks aside)'}`;
  if (!s.isWellFormed()) return 'contains an unpaired UTF-16 surrogate (\\uD800-\\uDFFF without its pair); that is not Unicode text';
  return null;
}

/**
 * Checks the text of a JSON document that JSON.parse has accepted: depth, names given twice,
 * numbers beyond a 64-bit float, control characters and unpaired surrogates in any string.
 * One pass, no recursion (a 100,000-deep document costs nothing extra). Throws a Refusal
 * (400) naming the first problem's path.
 */
export function checkJsonText(text) {
  const stack = [];
  const n = text.length;
  const refuse = (where, what) => { throw new Refusal(400, `${where || '(the document)'}: ${what}`); };
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= MAX_DEPTH) refuse(pointer(stack), `is nested more than ${MAX_DEPTH} levels deep; flatten it (a hw-lab result is 7 levels deep)`);
      stack.push(c === 0x7b ? { type: 'obj', keys: new Set(), key: '', expectKey: true } : { type: 'arr', index: 0 });
      i++;
    } else if (c === 0x7d || c === 0x5d) { stack.pop(); i++; }
    else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top.type === 'arr') top.index++; else top.expectKey = true;
      i++;
    } else if (c === 0x3a /* : */) { stack[stack.length - 1].expectKey = false; i++; }
    else if (c === 0x22 /* " */) {
      // the closing quote: the next " not escaped by an odd run of backslashes
      let j = text.indexOf('"', i + 1);
      for (;;) {
        let b = 0;
        while (text.charCodeAt(j - 1 - b) === 0x5c) b++;
        if (b % 2 === 0) break;
        j = text.indexOf('"', j + 1);
      }
      const raw = text.slice(i + 1, j);
      const value = raw.includes('\\') ? JSON.parse(text.slice(i, j + 1)) : raw;
      const top = stack[stack.length - 1];
      if (top && top.type === 'obj' && top.expectKey) {
        top.key = value;
        const p = textProblem(value, { name: true });
        if (p) refuse(pointer(stack), `the field name ${JSON.stringify(value)} ${p}`);
        if (top.keys.has(value)) refuse(pointer(stack), `the field ${JSON.stringify(value)} appears twice in one object; name each field once`);
        top.keys.add(value);
      } else {
        const p = textProblem(value);
        if (p) refuse(pointer(stack), p);
      }
      i = j + 1;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      while (j < n) {
        const d = text.charCodeAt(j);
        if ((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d) j++; else break;
      }
      if (!Number.isFinite(Number(text.slice(i, j)))) refuse(pointer(stack), `the number ${text.slice(i, j).slice(0, 40)} is beyond what a 64-bit float holds`);
      i = j;
    } else i++; // white space, true, false, null
  }
}

/** The one Idempotency-Key header, or null. A structured-field string ("...") is unquoted. */
export function idempotencyKey(headers) {
  const h = headers['idempotency-key'];
  if (h === undefined) return null;
  if (Array.isArray(h)) throw new Refusal(400, 'send one Idempotency-Key header');
  const v = h.trim().replace(/^"(.*)"$/, '$1');
  if (!KEY_RE.test(v)) throw new Refusal(400, 'the Idempotency-Key header takes 8 to 128 letters, digits, "-" or "_" (a random key per result file)');
  return v;
}

/** The student's display name from X-Vmemlab-Name (percent-encoded UTF-8), or null. */
export function displayName(headers) {
  const h = headers['x-vmemlab-name'];
  if (h === undefined) return null;
  if (Array.isArray(h)) throw new Refusal(400, 'send one X-Vmemlab-Name header');
  let s;
  try { s = decodeURIComponent(h); } catch { throw new Refusal(400, 'X-Vmemlab-Name: not percent-encoded UTF-8; encode the name (encodeURIComponent, urllib.parse.quote)'); }
  s = s.normalize('NFC').trim();
  if (s === '') return null;
  const p = textProblem(s, { name: true });
  if (p) throw new Refusal(400, `X-Vmemlab-Name: ${p}`);
  const length = [...s].length;
  if (length > NAME_MAX) throw new Refusal(400, `X-Vmemlab-Name: at most ${NAME_MAX} characters (this one has ${length})`);
  return s;
}

/** Fastify's clientErrorHandler: a request that did not arrive in time gets 408 and the
 * socket is closed; other broken requests get 400 (or 431 for oversized headers). */
export function clientErrorHandler(bodyTimeoutMs) {
  return function onClientError(err, socket) {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    let status = 400; let message = 'the request could not be read as HTTP';
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') { status = 408; message = `the request did not arrive within ${Math.round(bodyTimeoutMs / 1000)} s; send the whole body at once`; }
    else if (err.code === 'HPE_HEADER_OVERFLOW') { status = 431; message = 'the request headers are too large'; }
    const reason = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' }[status];
    const body = JSON.stringify({ statusCode: status, error: reason, message });
    if (socket.writable) socket.write(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    socket.destroy();
  };
}
