/* PostgreSQL frozen: every process of the cluster stopped with SIGSTOP, its sockets still
 * open, so that nothing is refused and nothing answers (as on a frozen host or VM). The
 * class server (listening on loopback, on a throwaway cluster) must answer anyway:
 *   - uploads, class reads and class creation 503 with Retry-After within 2.5 s, both right
 *     after the freeze (the pool's connections stuck in queries) and later (new connections
 *     to a postmaster that does not answer);
 *   - /api/health 200 with database "down" within 2.5 s;
 *   - requests already under way when the database froze answered within 2.5 s of it;
 * and after SIGCONT, without a restart: uploads stored again, health "up", and every upload
 * acknowledged (2xx) before, during or after the freeze is in the database. */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { resultWith, startPostgres, type Pg } from './helpers';

type App = Awaited<ReturnType<typeof buildServer>>;
let pg: Pg | null = null;
let app: App | null = null;
let url = '';
let ended = false; // set when the tests end, so that a load left running stops
beforeAll(async () => {
  pg = await startPostgres();
  pg.createDb('frozen');
  app = await buildServer({ databaseUrl: pg.url('frozen'), rateLimit: false, serveApp: false });
  url = await app.listen({ host: '127.0.0.1', port: 0 });
}, 60_000);
afterAll(async () => {
  ended = true;
  // Thawed before anything else: a cluster left stopped would hang its own shutdown.
  try { pg?.thaw(); } catch { /* stop() thaws too */ }
  try { await Promise.race([app?.close(), new Promise((r) => setTimeout(r, 10_000))]); } finally { pg?.stop(); }
}, 60_000);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const body = resultWith();
const LIMIT_MS = 2500;

interface Answer { what: string; sent: number; at: number; ms: number; status: number; retryAfter: string | null; json: Record<string, unknown> }
/** One request; its answer with the time it took. A request with no HTTP answer (none
 * within 10 s, or the connection dropped) is status 0 with the error in json.error. */
async function send(what: string, path: string, init: RequestInit = {}): Promise<Answer> {
  const sent = Date.now();
  try {
    const r = await fetch(`${url}${path}`, { ...init, signal: AbortSignal.timeout(10_000) });
    const json = await r.json().catch(() => ({}));
    const at = Date.now();
    return { what, sent, at, ms: at - sent, status: r.status, retryAfter: r.headers.get('retry-after'), json };
  } catch (e) {
    const at = Date.now();
    return { what, sent, at, ms: at - sent, status: 0, retryAfter: null, json: { error: String((e as Error).cause ?? e) } };
  }
}
const upload = (code: string, key: string) => send('upload', '/api/results', {
  method: 'POST', body, headers: { 'content-type': 'application/json', 'x-vmemlab-class': code, 'idempotency-key': key },
});
const createClass = () => send('class creation', '/api/classes', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"frozen"}' });
const refused = (a: Answer) => a.status === 503 && a.retryAfter === '5';

describe('PostgreSQL frozen (SIGSTOP): answers within 2.5 s, nothing acknowledged lost, healthy again after SIGCONT', () => {
  it('frozen and thawed under upload load', async () => {
    const made = await createClass();
    expect(made.status).toBe(201);
    const code = made.json.code as string;
    const acked = new Map<string, string>(); // Idempotency-Key → id
    const first = await upload(code, 'before-the-freeze');
    expect(first.status).toBe(201);
    acked.set('before-the-freeze', first.json.id as string);

    // Four clients upload one file after another; a 503 is sent again with the same key.
    const answers: Answer[] = [];
    const dropped: string[] = []; // requests that got no HTTP answer
    let stop = false;
    const worker = async () => {
      let key = randomBytes(12).toString('base64url');
      while (!stop && !ended) {
        const a = await upload(code, key);
        if (a.status === 0) { dropped.push(`${a.json.error} after ${a.ms} ms`); await sleep(100); continue; }
        answers.push(a);
        if (a.status === 200 || a.status === 201) { acked.set(key, a.json.id as string); key = randomBytes(12).toString('base64url'); } else await sleep(100);
      }
    };
    const workers = Array.from({ length: 4 }, worker);
    await sleep(500);

    let frozenAt = 0;
    try {
      frozenAt = Date.now();
      pg!.freeze();
      // Right after the freeze: the pool's connections are stuck in queries.
      const soon = await Promise.all([upload(code, 'during-the-freeze'), send('class GET', `/api/classes/${code}`), send('health', '/api/health'), createClass()]);
      // Later: those connections were closed; new ones meet a postmaster that does not answer.
      await sleep(500);
      const later = await Promise.all([upload(code, 'during-the-freeze'), send('class GET', `/api/classes/${code}`), send('health', '/api/health'), createClass()]);
      const frozenFor = Date.now() - frozenAt;
      const timings = (list: Answer[]) => list.map((a) => `${a.what} ${a.status} ${a.ms} ms`).join(', ');
      console.log(`frozen: right after the freeze: ${timings(soon)}; later: ${timings(later)}`);
      for (const a of [...soon, ...later]) {
        expect(a.ms, `${a.what}: ms to its answer`).toBeLessThan(LIMIT_MS);
        if (a.what === 'health') expect(a.status === 200 && a.json.database, 'health').toBe('down');
        else {
          expect(refused(a), `${a.what}: ${a.status} retry-after ${a.retryAfter} ${JSON.stringify(a.json)}`).toBe(true);
          expect(a.json.message).toMatch(/database is not reachable right now/);
        }
      }
      // The requests under way when the database froze were answered within 2.5 s of it.
      const underWay = answers.filter((a) => a.sent < frozenAt && a.at >= frozenAt);
      console.log(`under way at the freeze: ${underWay.map((a) => `${a.status} after ${a.at - frozenAt} ms`).join(', ') || 'none'}; frozen for ${frozenFor} ms`);
      for (const a of underWay) {
        expect(a.at - frozenAt, 'ms from the freeze to the answer of a request under way').toBeLessThan(LIMIT_MS);
        expect(a.status === 201 || refused(a), `${a.status} ${JSON.stringify(a.json)}`).toBe(true);
      }
      expect(answers.filter((a) => a.sent >= frozenAt).some(refused), 'the load was refused while frozen').toBe(true);
    } finally {
      pg!.thaw();
    }
    const thawedAt = Date.now();

    // Healthy again without a restart: a new upload is stored, health says "up".
    let back = Infinity;
    while (Date.now() - thawedAt < 10_000) {
      const a = await upload(code, randomBytes(12).toString('base64url'));
      if (a.status === 201) { back = Date.now() - thawedAt; acked.set(`after-${a.json.id}`, a.json.id as string); break; }
      await sleep(100);
    }
    console.log(`thawed: an upload stored ${back} ms after SIGCONT`);
    expect(back, 'ms from SIGCONT to a stored upload').toBeLessThan(10_000);
    await sleep(300);
    stop = true;
    await Promise.all(workers);
    expect((await send('health', '/api/health')).json.database).toBe('up');
    // The upload refused during the freeze, sent again with its key, is stored once.
    const again = await upload(code, 'during-the-freeze');
    expect([200, 201]).toContain(again.status);
    acked.set('during-the-freeze', again.json.id as string);

    expect(dropped, 'requests with no answer').toEqual([]);
    const other = answers.filter((a) => !(a.status === 200 || a.status === 201 || refused(a)));
    expect(other.slice(0, 3).map((a) => `${a.status} ${JSON.stringify(a.json)}`), `${other.length} answers neither 2xx nor 503`).toEqual([]);
    const stored = new Set(pg!.psql('frozen', `select id from results where class_code = '${code}'`).split('\n').filter(Boolean));
    const lost = [...acked.values()].filter((id) => !stored.has(id));
    expect(lost, `${acked.size} acknowledged`).toEqual([]);
    expect(acked.size).toBeGreaterThan(5);
  }, 60_000);
});
