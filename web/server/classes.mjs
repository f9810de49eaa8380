// What every class route does first, in one place for app.mjs and its plugins (traces,
// progress, dashboard): the class code from the path, the class from the store, the token
// from the Authorization header. Each plugin passes its own fail(status, message), which
// throws the error its error handler words.
import { createHash, timingSafeEqual } from 'node:crypto';

/** A class code as a path or header carries it (case does not matter; stored upper case). */
export const CODE_RE = /^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$/;

/** Tokens (teacher tokens, receipts) are stored only as their SHA-256. */
export const hashToken = (t) => createHash('sha256').update(t).digest('hex');
export const sameHash = (a, b) => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** loadClass(raw): the class a path's code names, or fail 400 (not a code) / 404 (none). */
export function classLoader(store, fail) {
  return async (raw) => {
    const code = String(raw ?? '').trim();
    if (!CODE_RE.test(code)) fail(400, 'a class code is 2-64 letters, digits, "-" or "_"');
    const cls = await store.getClass(code.toUpperCase());
    if (!cls) fail(404, `there is no class with the code "${code.toUpperCase()}"; check the code your teacher gave you`);
    return cls;
  };
}

/**
 * The hash of the request's Bearer token, or fail 401 (`needs` says what to send). With
 * optional: true a request without Authorization gives null instead.
 */
export function bearerHash(req, fail, { needs = 'teacher token or receipt', optional = false } = {}) {
  const h = req.headers.authorization;
  if (h === undefined || h === '') {
    if (optional) return null;
    fail(401, `this needs a token: send "Authorization: Bearer <${needs}>"`);
  }
  const m = /^Bearer\s+([A-Za-z0-9_-]{10,100})$/.exec(h);
  if (!m) fail(401, 'the Authorization header must be "Bearer <token>"');
  return hashToken(m[1]);
}
