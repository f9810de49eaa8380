/* A class's life on SQLite and PostgreSQL: the teacher closes it (uploads of results,
 * traces and progress refused with 409, reads and deletions go on), reopens it, and deletes
 * it with everything in it (uploads, traces, students and their progress, names), each only
 * with the teacher token; VMEMLAB_RETENTION_DAYS deletes a class with no write for that many
 * days and keeps an active one (a clock moved on, and a last_activity put back in time);
 * migration 005 files uploads measured inside a VM under "host's setting not visible". */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { ConfigError, readConfig } from '../../web/server/config.mjs';
import { openStore } from '../../web/server/db.mjs';
import { purgeIdle, startRetention } from '../../web/server/retention.mjs';
import { TDP_IN_VM } from '../../web/src/results/extract.mjs';
import { fixture, resultWith, root, startPostgres, type Pg } from './helpers';

type App = Awaited<ReturnType<typeof buildServer>>;
let pg: Pg | null = null;
const dirs: string[] = [];
const DAY = 86_400_000;
const tmp = () => { const d = mkdtempSync(join(tmpdir(), 'vmemlab-life-')); dirs.push(d); return d; };

beforeAll(async () => { pg = await startPostgres(); for (const db of ['life', 'retention', 'regroup']) pg.createDb(db); }, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

const json = { 'content-type': 'application/json' };
const auth = (token: string) => ({ authorization: `Bearer ${token}` });
const newClass = async (app: App, name = 'Lab') => (await app.inject({ method: 'POST', url: '/api/classes', payload: { name } })).json() as { code: string; teacher_token: string };
const upload = (app: App, code: string, body = JSON.stringify(fixture), headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/api/results', payload: body, headers: { ...json, 'x-vmemlab-class': code, ...headers } });
/** Rows of a class in every table that holds a class's records, and the class itself. */
async function rowsOf(app: App, code: string) {
  const out: Record<string, number> = {};
  for (const t of [...await app.store.classTables(), 'classes']) {
    const r = await app.store.db.selectFrom(t as 'classes').select((eb) => eb.fn.countAll().as('n')).where(t === 'classes' ? 'code' : 'class_code' as never, '=', code).executeTakeFirst();
    out[t] = Number((r as { n: number }).n);
  }
  return out;
}

describe.each(['sqlite', 'postgres'] as const)('closing and deleting a class on %s', (kind) => {
  let app: App;
  beforeAll(async () => {
    app = await buildServer({ databaseUrl: kind === 'postgres' ? pg!.url('life') : '', dataDir: tmp(), rateLimit: false, serveApp: false });
    // The progress plugin's tables, where it is not there: deletion empties whichever exist.
    for (const [t, cols] of [['students', 'name varchar(200)'], ['progress', 'student_id varchar(32)']]) {
      if (!(await app.store.classTables()).includes(t)) await app.store.db.schema.createTable(t).addColumn('id', 'varchar(32)').addColumn('class_code', 'varchar(64)').addColumn(cols.split(' ')[0], cols.split(' ')[1] as never).execute();
    }
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  it('close, reopen and delete take the teacher token: none 401, a wrong one or a receipt 403, no class 404', async () => {
    const { code, teacher_token: teacher } = await newClass(app);
    const { receipt } = (await upload(app, code)).json();
    for (const [method, path] of [['POST', 'close'], ['POST', 'reopen'], ['DELETE', '']] as const) {
      const url = `/api/classes/${code}${path ? `/${path}` : ''}`;
      expect((await app.inject({ method, url })).statusCode, `${method} ${url}`).toBe(401);
      for (const tok of ['A'.repeat(22), receipt]) {
        const r = await app.inject({ method, url, headers: auth(tok) });
        expect(r.statusCode, `${method} ${url}`).toBe(403);
        expect(r.json().message).toBe('this token is not the teacher token of this class');
      }
      expect((await app.inject({ method, url: url.replace(code, 'NOPE-NOPE'), headers: auth(teacher) })).statusCode).toBe(404);
    }
    expect((await rowsOf(app, code)).results).toBe(1);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}` })).json().closed_at).toBeNull();
  });

  it('a closed class refuses uploads of results, traces and progress (409, saying so); reads and deletions go on; reopened it takes them again', async () => {
    const { code, teacher_token: teacher } = await newClass(app);
    const before = (await upload(app, code)).json();
    const closed = await app.inject({ method: 'POST', url: `/api/classes/${code.toLowerCase()}/close`, headers: auth(teacher) });
    expect(closed.statusCode).toBe(200);
    const at = closed.json().closed_at;
    expect(Date.parse(at)).toBeGreaterThan(Date.now() - 60_000);
    // closing again keeps the first time
    expect((await app.inject({ method: 'POST', url: `/api/classes/${code}/close`, headers: auth(teacher) })).json().closed_at).toBe(at);

    const refused = [
      await upload(app, code, resultWith((r) => { r.created_utc = '2026-01-01T00:00:00Z'; })),
      await upload(app, code, JSON.stringify(fixture), { 'idempotency-key': 'k'.repeat(22) }),
      await app.inject({ method: 'POST', url: `/api/classes/${code}/traces`, payload: '{"label":"x","report":{},"trace":""}', headers: json }),
    ];
    if (app.hasRoute({ method: 'POST', url: '/api/classes/:code/progress' })) {
      refused.push(await app.inject({ method: 'POST', url: `/api/classes/${code}/progress`, payload: { records: [] }, headers: auth('A'.repeat(22)) }));
    }
    if (app.hasRoute({ method: 'POST', url: '/api/classes/:code/students' })) {
      refused.push(await app.inject({ method: 'POST', url: `/api/classes/${code}/students`, payload: { name: 'Late' } }));
    }
    for (const r of refused) {
      expect(r.statusCode, r.body).toBe(409);
      expect(r.json().message).toMatch(new RegExp(`^class ${code} is closed: .*uploads.*can still be read`));
    }
    expect((await rowsOf(app, code)).results).toBe(1);

    const cls = await app.inject({ method: 'GET', url: `/api/classes/${code}` });
    expect(cls.json()).toMatchObject({ code, closed_at: at, uploads: 1 });
    const list = (await app.inject({ method: 'GET', url: `/api/classes/${code}/results` })).json();
    expect(list.class).toEqual({ code, name: 'Lab', closed_at: at });
    expect(list.results).toHaveLength(1);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/results/${before.id}`, headers: auth(before.receipt) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/export.csv`, headers: auth(teacher) })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/traces` })).statusCode).toBe(200);
    // a student removes their own upload from a closed class with its receipt
    expect((await app.inject({ method: 'DELETE', url: `/api/classes/${code}/results/${before.id}`, headers: auth(before.receipt) })).json()).toEqual({ deleted: before.id, by: 'student' });

    const reopened = await app.inject({ method: 'POST', url: `/api/classes/${code}/reopen`, headers: auth(teacher) });
    expect(reopened.json()).toMatchObject({ code, closed_at: null });
    expect((await upload(app, code)).statusCode).toBe(201);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}` })).json().closed_at).toBeNull();
  });

  it('the class cache forgets a closed class at once on this instance', async () => {
    const { code, teacher_token: teacher } = await newClass(app);
    expect((await upload(app, code)).statusCode).toBe(201); // the class is cached now
    expect(app.store.classes.has(code)).toBe(true);
    await app.inject({ method: 'POST', url: `/api/classes/${code}/close`, headers: auth(teacher) });
    expect((await upload(app, code)).statusCode).toBe(409);
    await app.inject({ method: 'POST', url: `/api/classes/${code}/reopen`, headers: auth(teacher) });
    expect((await upload(app, code)).statusCode).toBe(201);
  });

  it('deletes a class with everything in it, more rows than one chunk, and nothing of another class', async () => {
    const { code, teacher_token: teacher } = await newClass(app, 'Gone');
    const other = await newClass(app, 'Stays');
    const kept = (await upload(app, other.code, JSON.stringify(fixture), { 'x-vmemlab-name': 'Kim' })).json();
    const mine = (await upload(app, code, JSON.stringify(fixture), { 'x-vmemlab-name': 'Ana', 'idempotency-key': 'i'.repeat(22) })).json();
    // 2,100 more uploads and a trace stored directly (deletion goes 2,000 rows at a time)
    const at = new Date().toISOString();
    for (let i = 0; i < 2100; i += 300) {
      await app.store.db.insertInto('results').values(Array.from({ length: 300 }, (_, j) => ({
        id: `bulk${i + j}`, class_code: code, receipt_hash: 'x', created_at: at, cpu_model: 'c', hypervisor: 'h', tdp: 't', summary: '{}', body: '{}', student_name: 'Bo',
      }))).execute();
    }
    await app.store.db.insertInto('traces').values({ id: 'tr1', class_code: code, receipt_hash: 'x', created_at: at, label: 'l', header: '{}', report: '{}', trace: '' }).execute();
    // a student who joined, with progress (through the progress routes when they are there)
    if (app.hasRoute({ method: 'POST', url: '/api/classes/:code/students' })) {
      const joined = await app.inject({ method: 'POST', url: `/api/classes/${code}/students`, payload: { name: 'Ana' } });
      expect(joined.statusCode, joined.body).toBe(201);
      const rec = { id: 'r'.repeat(22), type: 'done', lesson: 'four-address-spaces', done: true, at };
      const p = await app.inject({ method: 'POST', url: `/api/classes/${code}/progress`, payload: { records: [rec] }, headers: auth(joined.json().receipt) });
      expect(p.statusCode, p.body).toBe(200);
    } else {
      await app.store.db.insertInto('students' as never).values({ id: 's1', class_code: code, name: 'Ana' } as never).execute();
      await app.store.db.insertInto('progress' as never).values({ id: 'p1', class_code: code, student_id: 's1' } as never).execute();
    }
    const before = await rowsOf(app, code);
    expect(before).toMatchObject({ results: 2101, traces: 1, students: 1, classes: 1 });
    expect(before.progress).toBeGreaterThan(0);
    const otherBefore = await rowsOf(app, other.code);

    const del = await app.inject({ method: 'DELETE', url: `/api/classes/${code}`, headers: auth(teacher) });
    expect(del.statusCode, del.body).toBe(200);
    expect(del.json()).toMatchObject({ deleted: code, rows: { results: 2101, traces: 1, students: 1, progress: before.progress } });
    expect(Object.values(await rowsOf(app, code)).every((n) => n === 0)).toBe(true);
    expect(await rowsOf(app, other.code)).toEqual(otherBefore);
    // gone for everyone at once: no cached class lets anything in
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}` })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/results` })).statusCode).toBe(404);
    expect((await upload(app, code)).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${code}/results/${mine.id}`, headers: auth(mine.receipt) })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `/api/classes/${code}`, headers: auth(teacher) })).statusCode).toBe(404);
    // no name of the class is left anywhere in the database
    const names = await app.store.db.selectFrom('results').select('student_name').execute();
    expect(names.map((r) => r.student_name)).not.toContain('Ana');
    expect((await app.inject({ method: 'GET', url: `/api/classes/${other.code}/results/${kept.id}`, headers: auth(kept.receipt) })).statusCode).toBe(200);
  }, 60_000);
});

describe.each(['sqlite', 'postgres'] as const)('two server instances on one %s database', (kind) => {
  it('an upload through the other instance to a class deleted meanwhile is a 404, not an error', async () => {
    const opts = { databaseUrl: kind === 'postgres' ? pg!.url('life') : '', dataDir: tmp(), rateLimit: false as const, serveApp: false };
    const a = await buildServer(opts);
    const b = await buildServer({ ...opts, dataDir: opts.databaseUrl ? tmp() : opts.dataDir });
    try {
      const { code, teacher_token: teacher } = await newClass(a);
      expect((await upload(b, code)).statusCode).toBe(201); // b has the class in its cache now
      expect((await a.inject({ method: 'DELETE', url: `/api/classes/${code}`, headers: auth(teacher) })).statusCode).toBe(200);
      const late = await upload(b, code);
      expect(late.statusCode, late.body).toBe(404);
      expect(late.json().message).toBe(`there is no class with the code "${code}" any more; it was deleted`);
      expect((await rowsOf(a, code)).results).toBe(0);
    } finally { await b.close(); await a.close(); }
  }, 60_000);
});

describe.each(['sqlite', 'postgres'] as const)('retention on %s', (kind) => {
  let app: App; let clock = Date.now();
  beforeAll(async () => {
    app = await buildServer({ databaseUrl: kind === 'postgres' ? pg!.url('retention') : '', dataDir: tmp(), rateLimit: false, serveApp: false, now: () => clock });
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  it('deletes the classes with no write for N days and keeps the active ones (a clock moved on)', async () => {
    const active = await newClass(app, 'active');
    const idle = await newClass(app, 'idle');
    const closed = await newClass(app, 'closed, then idle');
    expect((await upload(app, idle.code)).statusCode).toBe(201);
    await app.inject({ method: 'POST', url: `/api/classes/${closed.code}/close`, headers: auth(closed.teacher_token) });
    expect(await purgeIdle(app.store, 30)).toEqual([]);
    clock += 40 * DAY;
    // an upload 40 days later is activity; reading is not
    expect((await upload(app, active.code)).statusCode).toBe(201);
    await app.inject({ method: 'GET', url: `/api/classes/${idle.code}/results` });
    const logged: string[] = [];
    expect((await purgeIdle(app.store, 30, (m) => logged.push(m))).sort()).toEqual([idle.code, closed.code].sort());
    expect(logged.join('\n')).toContain(`retention: class ${idle.code} had no activity for 30 days and was deleted (`);
    expect(Object.values(await rowsOf(app, idle.code)).every((n) => n === 0)).toBe(true);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${idle.code}` })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${active.code}` })).json().uploads).toBe(1);
    expect(await purgeIdle(app.store, 30)).toEqual([]);
    // one day short of the limit is kept; 0 days turns retention off
    clock += 29 * DAY;
    expect(await purgeIdle(app.store, 30)).toEqual([]);
    expect(await purgeIdle(app.store, 0)).toEqual([]);
    clock += 2 * DAY;
    expect(await purgeIdle(app.store, 30)).toEqual([active.code]);
  });

  it('the timer deletes a class whose last write was long ago at start, and keeps a fresh one', async () => {
    clock = Date.now();
    const old = await newClass(app, 'last term');
    const fresh = await newClass(app, 'this term');
    expect((await upload(app, old.code)).statusCode).toBe(201);
    await app.store.db.updateTable('classes').set({ last_activity: '2020-01-01T00:00:00.000Z', created_at: '2019-09-01T00:00:00.000Z' }).where('code', '=', old.code).execute();
    const logged: string[] = [];
    const stop = startRetention(app, 365, { log: (m) => logged.push(m), everyMs: 3_600_000 });
    try {
      await expect.poll(async () => (await app.inject({ method: 'GET', url: `/api/classes/${old.code}` })).statusCode, { timeout: 5000 }).toBe(404);
    } finally { stop(); }
    expect(logged[0]).toBe('retention: classes with no activity for 365 days are deleted with everything in them (checked at start and hourly)');
    expect((await rowsOf(app, old.code)).results).toBe(0);
    expect((await app.inject({ method: 'GET', url: `/api/classes/${fresh.code}` })).statusCode).toBe(200);
  });
});

describe('VMEMLAB_RETENTION_DAYS', () => {
  it('is off unless given, and a bad value stops the server with one line', () => {
    expect(readConfig({}).retentionDays).toBe(0);
    expect(readConfig({ VMEMLAB_RETENTION_DAYS: ' 180 ' }).retentionDays).toBe(180);
    for (const v of ['abc', '-1', '1.5', '36501']) {
      expect(() => readConfig({ VMEMLAB_RETENTION_DAYS: v })).toThrow(ConfigError);
      expect(() => readConfig({ VMEMLAB_RETENTION_DAYS: v })).toThrow(`VMEMLAB_RETENTION_DAYS=${JSON.stringify(v)}: takes a whole number of days from 0 to 36500`);
    }
    const r = spawnSync(process.execPath, [join(root, 'web', 'server', 'main.mjs')], { env: { ...process.env, PORT: '0', VMEMLAB_DATA_DIR: tmp(), VMEMLAB_RETENTION_DAYS: 'forever' }, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toEqual(['vmemlab server failed to start: bad setting: VMEMLAB_RETENTION_DAYS="forever": takes a whole number of days from 0 to 36500: a class with no upload or change for that long is deleted with everything in it; 0 or unset: classes are kept until their teacher deletes them']);
  });
});

describe.each(['sqlite', 'postgres'] as const)('uploads measured inside a VM on %s', (kind) => {
  it('are filed under "host\'s setting not visible", never under the VM\'s own KVM backend; migration 005 files older ones so', async () => {
    const dataDir = tmp();
    const opts = { databaseUrl: kind === 'postgres' ? pg!.url('regroup') : '', dataDir, rateLimit: false as const, serveApp: false };
    let app = await buildServer(opts);
    const { code } = await newClass(app);
    // Firecracker on AMD EPYC: no VT-x, /dev/kvm is kvm_pvm
    const pvm = resultWith((r) => { (r.probe.kvm as Record<string, unknown>).backend = 'kvm_pvm'; });
    const host = resultWith((r) => { r.probe.virtualization.in_vm = false; r.probe.kvm.tdp = 'Y'; r.probe.cpu.vendor = 'GenuineIntel'; (r.probe.kvm as Record<string, unknown>).backend = 'kvm_intel'; });
    const a = (await upload(app, code, pvm)).json(); const b = (await upload(app, code, host)).json();
    const list = async () => Object.fromEntries((await app.inject({ method: 'GET', url: `/api/classes/${code}/results` })).json().results.map((r: { id: string }) => [r.id, r]));
    expect((await list())[a.id]).toMatchObject({ hypervisor: 'kvm', tdp: TDP_IN_VM, kvm_backend: 'kvm_pvm' });
    expect((await list())[b.id]).toMatchObject({ hypervisor: 'none (bare metal)', tdp: 'EPT on', kvm_backend: 'kvm_intel' });
    // as an older server stored it, then migration 005 once more
    await app.store.db.updateTable('results').set({ tdp: 'shadow paging (kvm_pvm)', summary: JSON.stringify({ ...(await list())[a.id], tdp: 'shadow paging (kvm_pvm)', kvm_backend: undefined }) }).where('id', '=', a.id).execute();
    expect((await list())[a.id].tdp).toBe('shadow paging (kvm_pvm)');
    // (an older server had none of the migrations from 005 on: 006's column goes too)
    await app.store.db.deleteFrom('kysely_migration' as never).where('name' as never, '>=', '005_vm_tdp' as never).execute();
    await app.store.db.schema.alterTable('classes').dropColumn('deleting_at').execute();
    await app.close();
    app = await buildServer(opts);
    try {
      expect((await list())[a.id]).toMatchObject({ tdp: TDP_IN_VM, kvm_backend: 'kvm_pvm' });
      expect((await app.store.db.selectFrom('results').select('tdp').where('id', '=', a.id).executeTakeFirstOrThrow()).tdp).toBe(TDP_IN_VM);
      expect((await list())[b.id]).toMatchObject({ tdp: 'EPT on' });
    } finally { await app.close(); }
    // the store alone opens it too (what a second instance would do)
    const store = await openStore({ databaseUrl: opts.databaseUrl, dataDir });
    await store.close();
  }, 60_000);
});
