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
 * values (notes and command lines hold them), never in names (nor the Unicode line and
 * paragraph separators). Bidirectional overrides and isolates would let a display name
 * read differently from what it is. */
const CONTROL_IN_VALUE = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const CONTROL_IN_NAME = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** What is wrong with one piece of text, or null. */
export function textProblem(s, { name = false } = {}) {
  const m = (name ? CONTROL_IN_NAME : CONTROL_IN_VALUE).exec(s);
  if (m) return `contains the control character ${hex(m[0].charCodeAt(0))}; text may not hold control characters${name ? '' : ' (tab and line breaks aside)'}`;
  if (!s.isWellFormed()) return 'contains an unpaired UTF-16 surrogate (\\uD800-\\uDFFF without its pair); that is not Unicode text';
  return null;
}

/* Text that may hold a problem textProblem would find: a raw control or bidi character, or
 * an escape that can stand for one (\u, \b, \f). Documents without any skip the
 * per-string check. */
const RAW_BAD = /[\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const mayHoldBadText = (text, ascii = false) => (ascii ? text.includes('\u007f') : RAW_BAD.test(text)) || ['\\u', '\\b', '\\f', '\\n', '\\r', '\\t'].some((e) => text.includes(e));

/** How many strings (names and values) the text of a valid JSON document has: half its
 * unescaped quotes (a '"' inside a string is always escaped). */
function stringsInText(text) {
  let quotes = 0;
  for (let i = text.indexOf('"'); i !== -1; i = text.indexOf('"', i + 1)) {
    let b = 0;
    while (text.charCodeAt(i - 1 - b) === 0x5c) b++;
    if (b % 2 === 0) quotes++;
  }
  return quotes / 2;
}

/** Walks a parsed document (never deeper than MAX_DEPTH + 1 calls): depth, non-finite
 * numbers, arrays and objects longer than caps.maxItems, strings longer than caps.maxString and, when
 * asked, text problems; returns how many strings (names and values) it holds. It stops at
 * the first problem: an untrusted document is never checked by collecting every error. */
function walk(v, depth, path, checkText, caps) {
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Refusal(400, `${pointerOf(path)}: is a number beyond what a 64-bit float holds`);
    return 0;
  }
  if (typeof v === 'string') {
    if (v.length > caps.maxString) throw new Refusal(400, `${pointerOf(path)}: is a text of ${v.length} characters; at most ${caps.maxString} are taken here`);
    const p = checkText && textProblem(v);
    if (p) throw new Refusal(400, `${pointerOf(path)}: ${p}`);
    return 1;
  }
  if (v === null || typeof v !== 'object') return 0;
  if (depth >= MAX_DEPTH) throw new Refusal(400, `${pointerOf(path)}: is nested more than ${MAX_DEPTH} levels deep; flatten it (a hw-lab result is 7 levels deep)`);
  let strings = 0;
  if (Array.isArray(v)) {
    if (v.length > caps.maxItems) throw new Refusal(400, `${pointerOf(path)}: is a list of ${v.length} items; at most ${caps.maxItems} are taken here (a hw-lab result has a few dozen)`);
    for (let i = 0; i < v.length; i++) { path.push(i); strings += walk(v[i], depth + 1, path, checkText, caps); path.pop(); }
    return strings;
  }
  const keys = Object.keys(v);
  if (keys.length > caps.maxItems) throw new Refusal(400, `${pointerOf(path)}: is an object of ${keys.length} fields; at most ${caps.maxItems} are taken here`);
  for (const k of keys) {
    strings++;
    path.push(k);
    const p = checkText && textProblem(k, { name: true });
    if (p) throw new Refusal(400, `${pointerOf(path)}: the field name ${JSON.stringify(k)} ${p}`);
    strings += walk(v[k], depth + 1, path, checkText, caps);
    path.pop();
  }
  return strings;
}
const pointerOf = (path) => path.map((k) => '/' + String(k).replace(/~/g, '~0').replace(/\//g, '~1')).join('') || '(the document)';

/**
 * Checks a document JSON.parse has made of `text`: nesting deeper than MAX_DEPTH, numbers
 * beyond a 64-bit float, control characters and unpaired surrogates in any name or string,
 * and names given twice in one object (JSON.parse keeps the last, so the text then has more
 * strings than the value: the name given twice at least; checkJsonText finds where).
 * ascii: the caller knows the text is all ASCII (then DEL is the only raw control
 * character it can hold: JSON strings cannot hold raw C0 controls). maxItems, maxString:
 * the longest list and text taken anywhere in the document (checked before any schema
 * runs, so a schema never walks a list of 80,000 items). Throws a Refusal (400) naming the
 * first problem's path.
 */
export function checkJson(text, value, { ascii = false, maxItems = Infinity, maxString = Infinity } = {}) {
  const strings = walk(value, 0, [], mayHoldBadText(text, ascii), { maxItems, maxString });
  if (strings !== stringsInText(text)) {
    checkJsonText(text);
    throw new Refusal(400, '(the document): a field appears twice in one object; name each field once');
  }
}

/**
 * The same checks on the text alone (of a document JSON.parse has accepted), in one pass
 * without recursion: slower than checkJson, which calls it to find a name given twice.
 */
export function checkJsonText(text) {
  const checkText = mayHoldBadText(text);
  const stack = []; // one frame per open object or array: { type, keys, key, index, expectKey }
  const n = text.length;
  const refuse = (where, what) => { throw new Refusal(400, `${where || '(the document)'}: ${what}`); };
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      // the closing quote: the next " not escaped by an odd run of backslashes
      let j = text.indexOf('"', i + 1);
      while (text.charCodeAt(j - 1) === 0x5c) {
        let b = 1;
        while (text.charCodeAt(j - 1 - b) === 0x5c) b++;
        if (b % 2 === 0) break;
        j = text.indexOf('"', j + 1);
      }
      const top = stack[stack.length - 1];
      if (top !== undefined && top.expectKey) {
        let key = text.slice(i + 1, j);
        if (key.includes('\\')) key = JSON.parse(text.slice(i, j + 1));
        top.key = key;
        if (checkText) {
          const p = textProblem(key, { name: true });
          if (p) refuse(pointer(stack), `the field name ${JSON.stringify(key)} ${p}`);
        }
        if (top.keys.has(key)) refuse(pointer(stack), `the field ${JSON.stringify(key)} appears twice in one object; name each field once`);
        top.keys.add(key);
        top.expectKey = false;
      } else if (checkText) {
        const raw = text.slice(i + 1, j);
        const p = textProblem(raw.includes('\\') ? JSON.parse(text.slice(i, j + 1)) : raw);
        if (p) refuse(pointer(stack), p);
      }
      i = j + 1;
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top.type === 'arr') top.index++; else top.expectKey = true;
      i++;
    } else if (c === 0x7b /* { */ || c === 0x5b /* [ */) {
      if (stack.length >= MAX_DEPTH) refuse(pointer(stack), `is nested more than ${MAX_DEPTH} levels deep; flatten it (a hw-lab result is 7 levels deep)`);
      stack.push(c === 0x7b ? { type: 'obj', keys: new Set(), key: '', index: 0, expectKey: true } : { type: 'arr', keys: null, key: '', index: 0, expectKey: false });
      i++;
    } else if (c === 0x7d || c === 0x5d) { stack.pop(); i++; }
    else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1; let exp = false;
      for (; j < n; j++) {
        const d = text.charCodeAt(j);
        if (d === 0x65 || d === 0x45) exp = true;
        else if (!((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x2b || d === 0x2d)) break;
      }
      // Only an exponent or some 309 digits take a number past the largest double.
      if ((exp || j - i > 300) && !Number.isFinite(Number(text.slice(i, j)))) refuse(pointer(stack), `the number ${text.slice(i, j).slice(0, 40)} is beyond what a 64-bit float holds`);
      i = j;
    } else i++; // white space, ':', true, false, null
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
