/* The class list a page at a time and the CSV export, on SQLite and on a real PostgreSQL:
 * csvCell neutralises every cell (and every ;-separated part of one) a spreadsheet could
 * read as a formula, keeps numbers as numbers and quotes as RFC 4180 says; the export
 * starts with a UTF-8 BOM unless ?bom=0, is streamed a page at a time (its first page reaches
 * the client before the second is read; the event loop turns between pages) and lists every
 * upload once, in order; GET .../results pages with limit and cursor, lists an upload that
 * arrives between pages once, and refuses a bad limit or cursor naming it. Last, LibreOffice
 * (headless soffice, as setup installs it) opens an export: no formula runs and names in
 * Japanese and Chinese come through. */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { get } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { CSV_COLUMNS, csvCell } from '../../web/server/csv.mjs';
import { summarize } from '../../web/src/results/extract.mjs';
import { fixture, resultWith, startPostgres, type Pg } from './helpers';

type App = Awaited<ReturnType<typeof buildServer>>;
type Page = { rows: { id: string; created_at: string }[]; next_cursor: string | null };
let pg: Pg | null = null;
const dirs: string[] = [];
const tmp = (prefix: string) => { const d = mkdtempSync(join(tmpdir(), prefix)); dirs.push(d); return d; };

beforeAll(async () => { pg = await startPostgres(); pg.createDb('csv'); }, 60_000);
afterAll(() => { pg?.stop(); for (const d of dirs) rmSync(d, { recursive: true, force: true }); });

/** RFC 4180 records from CSV text (quoted cells, doubled quotes, CRLF inside quotes). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []; let row: string[] = []; let cell = ''; let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"' && cell === '') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; }
    else if (c === '\r' && text[i + 1] === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i++; }
    else cell += c;
  }
  expect(quoted, 'the CSV ends inside a quoted cell').toBe(false);
  expect(cell === '' && row.length === 0, 'the CSV does not end with CRLF').toBe(true);
  return rows;
}

/** What a spreadsheet may take for the start of a formula. */
const FORMULA = /^(\s*[=+\-@]|[\t\r])/;
const HOSTILE = ['=1+1', ' =1+1', 'x;=1+1;', "+cmd|' /C calc'!A0", '@SUM(1)', '-2+3'];
const NEUTRALISED = ["'=1+1", "' =1+1", "x;'=1+1;", "'+cmd|' /C calc'!A0", "'@SUM(1)", "'-2+3"];
// Display names are stored trimmed (limits.mjs), so ' =1+1' reaches the CSV as '=1+1'; the
// CPU model is kept as sent.
const NAMES_NEUTRALISED = ["'=1+1", "'=1+1", "x;'=1+1;", "'+cmd|' /C calc'!A0", "'@SUM(1)", "'-2+3"];
/** An upload id as the CSV writes it: ids are base64url, and one that starts with - gets a '. */
const csvId = (id: string) => (id.startsWith('-') ? `'${id}` : id);

describe('csvCell', () => {
  it('neutralises formulas at the start of a cell and of each ;-separated part', () => {
    expect(HOSTILE.map(csvCell)).toEqual(["'=1+1", "' =1+1", `"x;'=1+1;"`, "'+cmd|' /C calc'!A0", "'@SUM(1)", "'-2+3"]);
    expect(csvCell('\tx')).toBe("'\tx");
    expect(csvCell('\rx')).toBe(`"'\rx"`);
    expect(csvCell('\n=1')).toBe(`"'\n=1"`);
    expect(csvCell('a; -1;b;@x')).toBe(`"a;' -1;b;'@x"`);
    expect(csvCell('=a;=b')).toBe(`"'=a;'=b"`);
    expect(csvCell('1+1')).toBe('1+1');
    expect(csvCell('山田 =SUM(A1)')).toBe('山田 =SUM(A1)');
  });

  it('keeps numbers plain, negative ones too, and quotes text that only looks like one', () => {
    expect([-5, 64, 0.25, -1.5e-7, 0].map(csvCell)).toEqual(['-5', '64', '0.25', '-1.5e-7', '0']);
    expect(csvCell('-5')).toBe("'-5");
    expect(csvCell(null)).toBe('');
    expect(csvCell(undefined)).toBe('');
  });

  it('quotes , " ; CR and LF as RFC 4180 says', () => {
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('a;b')).toBe('"a;b"');
    expect(csvCell('a\r\nb')).toBe('"a\r\nb"');
    expect(csvCell('plain text')).toBe('plain text');
  });

  it('on random text, no cell and no ;-part of one starts a formula, read by , or by ;', () => {
    let s = 12345;
    const rnd = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return s / 4294967296; };
    const alphabet = ['=', '+', '-', '@', ';', ',', '"', ' ', '\t', '\r', '\n', "'", 'a', '1', '山', '\u3000'];
    for (let n = 0; n < 5000; n++) {
      let v = '';
      for (let k = Math.floor(rnd() * 12); k > 0; k--) v += alphabet[Math.floor(rnd() * alphabet.length)];
      const out = csvCell(v);
      const [[back]] = parseCsv(`${out}\r\n`);
      // as written to a spreadsheet that splits on , (the cell) and on ; (its parts)
      for (const part of back.split(';')) expect(FORMULA.test(part), JSON.stringify([v, out])).toBe(false);
      // a reader that splits on ; and ignores quotes sees the quote itself first
      for (const part of out.split(';')) expect(FORMULA.test(part.replace(/^"/, '')), JSON.stringify([v, out])).toBe(false);
      // nothing but those apostrophes was added
      expect(back).toBe(v.split(';').map((p) => (FORMULA.test(p) ? `'${p}` : p)).join(';'));
    }
  });
});

describe.each(['sqlite', 'postgres'] as const)('the class list and the CSV export on %s', (kind) => {
  let app: App;
  let code: string; let teacher: string;
  const base = summarize(fixture);
  const auth = () => ({ authorization: `Bearer ${teacher}` });
  const up = (headers: Record<string, string> = {}, body = resultWith()) => app.inject({ method: 'POST', url: '/api/results', payload: body, headers: { 'content-type': 'application/json', 'x-vmemlab-class': code, ...headers } });
  const newClass = async (name: string) => (await app.inject({ method: 'POST', url: '/api/classes', payload: { name } })).json() as { code: string; teacher_token: string };
  const list = (c: string, query: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url: `/api/classes/${c}/results${query}`, headers });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** Rows written straight into the store (a large class in a second): created_at repeats
   * in runs of 7, so that pages end inside a run of equal times and the id decides. */
  async function bigClass(n: number) {
    const c = await newClass(`big ${kind}`);
    const rows = Array.from({ length: n }, (_, i) => ({
      id: randomBytes(6).toString('base64url'), class_code: c.code, receipt_hash: 'x'.repeat(64),
      created_at: new Date(Date.UTC(2026, 0, 1) + Math.floor(i / 7) * 1000).toISOString(),
      cpu_model: base.cpu_model, hypervisor: base.hypervisor, tdp: base.tdp, body: '{}',
      summary: JSON.stringify({ ...base, metrics: { ...base.metrics, cpuid_exit_cycles: i % 5 === 0 ? -i : i } }),
      student_name: i % 2 ? `学生${i}` : null, idem_hash: null, body_hash: null,
    }));
    for (let i = 0; i < n; i += 500) await app.store.db.insertInto('results').values(rows.slice(i, i + 500)).execute();
    const order = rows.map((r) => [r.created_at, r.id]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0)).map((r) => r[1]);
    return { ...c, rows, order };
  }

  beforeAll(async () => {
    app = await buildServer({ databaseUrl: kind === 'postgres' ? pg!.url('csv') : '', dataDir: tmp('vmemlab-csv-'), rateLimit: false, serveApp: false });
    ({ code, teacher_token: teacher } = await newClass('CSV 101'));
  }, 60_000);
  afterAll(async () => { await app?.close(); });

  it('exports hostile names and models neutralised, Japanese and Chinese names as they are, numbers as numbers', async () => {
    const names = [...HOSTILE, '山田太郎', '张伟'];
    const ids: string[] = [];
    for (const n of names) {
      const r = await up({ 'x-vmemlab-name': encodeURIComponent(n) }, resultWith((d) => { d.probe.cpu.model_name = HOSTILE.includes(n) ? n : 'AMD EPYC'; }));
      expect(r.statusCode, r.body).toBe(201);
      ids.push(r.json().id);
    }
    const res = await app.inject({ method: 'GET', url: `/api/classes/${code}/export.csv`, headers: auth() });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.rawPayload.subarray(0, 3)).toEqual(Buffer.from([0xef, 0xbb, 0xbf]));
    const [head, ...rows] = parseCsv(res.rawPayload.subarray(3).toString('utf8'));
    expect(head).toEqual(CSV_COLUMNS);
    const col = (name: string) => CSV_COLUMNS.indexOf(name);
    const byId = new Map(rows.map((r) => [r[0], r]));
    expect(ids.map((id) => byId.get(csvId(id))![col('name')])).toEqual([...NAMES_NEUTRALISED, '山田太郎', '张伟']);
    expect(ids.map((id) => byId.get(csvId(id))![col('cpu_model')])).toEqual([...NEUTRALISED, 'AMD EPYC', 'AMD EPYC']);
    for (const r of rows) {
      for (const cell of r) for (const part of cell.split(';')) expect(FORMULA.test(part), cell).toBe(false);
      expect(r[col('mem_mib')]).toBe('64');
      expect(r[col('cpuid_exit_cycles')]).toMatch(/^[0-9.e+-]+$/);
    }
  });

  it('starts with a UTF-8 BOM unless ?bom=0, and refuses any other bom', async () => {
    const url = `/api/classes/${code}/export.csv`;
    const on = await app.inject({ method: 'GET', url: `${url}?bom=1`, headers: auth() });
    const off = await app.inject({ method: 'GET', url: `${url}?bom=0`, headers: auth() });
    expect(on.rawPayload.subarray(0, 3).toString('hex')).toBe('efbbbf');
    expect(off.rawPayload.subarray(0, 3).toString('utf8')).toBe('id,');
    expect(on.rawPayload.subarray(3)).toEqual(off.rawPayload);
    for (const q of ['bom=yes', 'bom=', 'bom=0&bom=1']) {
      const r = await app.inject({ method: 'GET', url: `${url}?${q}`, headers: auth() });
      expect(r.statusCode, q).toBe(400);
      expect(r.json().message).toMatch(/^bom: /);
    }
    // the teacher only, as before
    expect((await app.inject({ method: 'GET', url: `${url}?bom=0` })).statusCode).toBe(401);
  });

  it('streams a class of 3,000 uploads a page at a time: every upload once, in order', async () => {
    const big = await bigClass(3000);
    const store = app.store as unknown as { listResultsPage: (c: string, p: { limit: number; after: unknown }) => Promise<Page> };
    const orig = store.listResultsPage;
    const limits: number[] = []; const turned: boolean[] = [];
    let ticked = true;
    store.listResultsPage = async (c, p) => {
      // did the event loop turn (a setImmediate set at the previous page ran) since then?
      turned.push(ticked); ticked = false; setImmediate(() => { ticked = true; });
      limits.push(p.limit);
      return orig.call(app.store, c, p);
    };
    try {
      const res = await app.inject({ method: 'GET', url: `/api/classes/${big.code}/export.csv?bom=0`, headers: { authorization: `Bearer ${big.teacher_token}` } });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-length']).toBeUndefined(); // sent as it was made
      const [, ...rows] = parseCsv(res.body);
      expect(rows.map((r) => r[0])).toEqual(big.order.map(csvId));
      const col = (name: string) => CSV_COLUMNS.indexOf(name);
      const first = big.rows.find((r) => r.id === big.order[0])!;
      expect(rows[0][col('uploaded_utc')]).toBe(first.created_at);
      // a negative metric is a plain negative number
      const neg = rows.find((r) => r[col('cpuid_exit_cycles')].startsWith('-'));
      expect(neg![col('cpuid_exit_cycles')]).toMatch(/^-\d+$/);
      expect(new Set(rows.map((r) => r[col('name')]).filter((n) => n.startsWith('学生'))).size).toBe(1500);
    } finally { store.listResultsPage = orig; }
    expect(limits).toEqual([500, 500, 500, 500, 500, 500]);
    expect(turned).toEqual([true, true, true, true, true, true]);

    // Over a socket: the first page reaches the client before the second is read.
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    let reads = 0;
    store.listResultsPage = async (c, p) => { if (++reads === 2) await gate; return orig.call(app.store, c, p); };
    try {
      const got = await new Promise<{ early: string; all: Buffer; headers: Record<string, unknown> }>((resolve, reject) => {
        const req = get(`${base}/api/classes/${big.code}/export.csv`, { headers: { authorization: `Bearer ${big.teacher_token}` } }, (res) => {
          const parts: Buffer[] = []; let early = '';
          res.on('data', (b: Buffer) => {
            parts.push(b);
            if (!early && Buffer.concat(parts).toString('utf8').split('\r\n').length > 501) { early = Buffer.concat(parts).toString('utf8'); release(); }
          });
          res.on('end', () => resolve({ early, all: Buffer.concat(parts), headers: res.headers }));
          res.on('error', reject);
        });
        req.on('error', reject);
        setTimeout(() => reject(new Error('the first page did not arrive before the second was read')), 20_000).unref();
      });
      expect(reads).toBe(6);
      expect(got.headers['transfer-encoding']).toBe('chunked');
      expect(got.early.startsWith('\uFEFFid,name,')).toBe(true);
      expect(parseCsv(got.all.subarray(3).toString('utf8')).slice(1).map((r) => r[0])).toEqual(big.order.map(csvId));
    } finally { store.listResultsPage = orig; release(); }

    // the class list: 500 a page by default, next_cursor to follow
    const page = (await list(big.code, '')).json();
    expect(page.results).toHaveLength(500);
    expect(page.next_cursor).toEqual(expect.any(String));
    expect(page.results.map((r: { id: string }) => r.id)).toEqual(big.order.slice(0, 500));
  }, 120_000);

  it('lists 3 pages of limit=2: every upload once, in order, next_cursor null on the last', async () => {
    const c = await newClass('pages');
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await up({ 'x-vmemlab-class': c.code, 'x-vmemlab-name': `s${i}` });
      expect(r.statusCode).toBe(201); ids.push(r.json().id);
      await sleep(3); // distinct upload times
    }
    const seen: string[] = []; const cursors: (string | null)[] = [];
    let cursor: string | null = null;
    do {
      const r = await list(c.code, `?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { authorization: `Bearer ${c.teacher_token}` });
      expect(r.statusCode, r.body).toBe(200);
      const j = r.json();
      expect(j.results).toHaveLength(2);
      expect(j.class).toMatchObject({ code: c.code, name: 'pages' });
      seen.push(...j.results.map((x: { id: string; name: string }) => { expect(x.name).toBe(`s${ids.indexOf(x.id)}`); return x.id; }));
      cursor = j.next_cursor; cursors.push(cursor);
    } while (cursor);
    expect(cursors).toHaveLength(3);
    expect(cursors[2]).toBeNull();
    expect(seen).toEqual(ids);
    // the same order as one page of all of them
    expect((await list(c.code, '')).json().results.map((x: { id: string }) => x.id)).toEqual(ids);
  });

  it('lists an upload that arrives between pages once, at the end', async () => {
    const c = await newClass('arrivals');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) { ids.push((await up({ 'x-vmemlab-class': c.code })).json().id); await sleep(3); }
    const p1 = (await list(c.code, '?limit=2')).json();
    const late = (await up({ 'x-vmemlab-class': c.code })).json().id;
    const p2 = (await list(c.code, `?limit=2&cursor=${p1.next_cursor}`)).json();
    // an upload already listed is deleted meanwhile: the pages after it go on
    await app.inject({ method: 'DELETE', url: `/api/classes/${c.code}/results/${p1.results[0].id}`, headers: { authorization: `Bearer ${c.teacher_token}` } });
    const p3 = (await list(c.code, `?limit=2&cursor=${p2.next_cursor}`)).json();
    const p4 = p3.next_cursor ? (await list(c.code, `?limit=2&cursor=${p3.next_cursor}`)).json() : { results: [], next_cursor: null };
    const seen = [p1, p2, p3, p4].flatMap((p) => p.results.map((x: { id: string }) => x.id));
    expect(seen).toEqual([...ids, late]);
    expect(p4.next_cursor).toBeNull();
  });

  it('refuses a bad limit or cursor with 400 naming it', async () => {
    const good = (await list(code, '?limit=1')).json().next_cursor as string;
    expect(good).toEqual(expect.any(String));
    const bad: [string, RegExp][] = [
      ['limit=0', /^limit: /], ['limit=501', /^limit: a whole number from 1 to 500/], ['limit=-1', /^limit: /], ['limit=abc', /^limit: /],
      ['limit=1.5', /^limit: /], ['limit=', /^limit: /], ['limit=1&limit=2', /^limit: /], ['limit=1e2', /^limit: /],
      ['cursor=not%20base64', /^cursor: /], [`cursor=${Buffer.from('garbage').toString('base64url')}`, /^cursor: /],
      [`cursor=${Buffer.from('2026-01-01T00:00:00.000Z\nid\nextra').toString('base64url')}`, /^cursor: /],
      [`cursor=${Buffer.from("2026-01-01T00:00:00.000Z\n' or 1=1 --").toString('base64url')}`, /^cursor: /],
      [`cursor=${good}&cursor=${good}`, /^cursor: /], [`cursor=${'A'.repeat(200)}`, /^cursor: /],
    ];
    for (const [q, msg] of bad) {
      const r = await list(code, `?${q}`);
      expect(r.statusCode, q).toBe(400);
      expect(r.json().message, q).toMatch(msg);
    }
    expect((await list(code, `?limit=1&cursor=${good}`)).statusCode).toBe(200);
  });
});

/** The cells of an OpenDocument flat spreadsheet (.fods): per row, per column (repeated
 * cells expanded), the displayed text, the value type and the formula if the cell has one. */
function fodsCells(xml: string): { text: string; type: string; formula: string | null }[][] {
  const unescape = (s: string) => s.replace(/<text:s(?: text:c="(\d+)")?\/>/g, (_m, n) => ' '.repeat(Number(n ?? 1))).replace(/<[^>]+>/g, '')
    .replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
  const rows: { text: string; type: string; formula: string | null }[][] = [];
  for (const [, body] of xml.matchAll(/<table:table-row\b[^>]*>([\s\S]*?)<\/table:table-row>/g)) {
    const row: { text: string; type: string; formula: string | null }[] = [];
    for (const m of body.matchAll(/<table:table-cell\b([^>]*?)(?:\/>|>([\s\S]*?)<\/table:table-cell>)/g)) {
      const attrs = m[1];
      const repeat = Number(/table:number-columns-repeated="(\d+)"/.exec(attrs)?.[1] ?? 1);
      const cell = {
        text: [...(m[2] ?? '').matchAll(/<text:p>([\s\S]*?)<\/text:p>/g)].map((p) => unescape(p[1])).join('\n'),
        type: /office:value-type="([^"]+)"/.exec(attrs)?.[1] ?? 'empty',
        formula: /table:formula="([^"]*)"/.exec(attrs)?.[1] ?? null,
      };
      for (let i = 0; i < Math.min(repeat, 100); i++) row.push(cell);
    }
    rows.push(row);
  }
  return rows;
}

describe('a spreadsheet opens the export (LibreOffice)', () => {
  it('runs no formula and shows the Japanese and Chinese names', async () => {
    const soffice = spawnSync('soffice', ['--version'], { encoding: 'utf8', timeout: 60_000 });
    if (soffice.error || soffice.status !== 0) throw new Error(`LibreOffice's soffice is not installed (${soffice.error?.message ?? soffice.stderr}): apt-get install -y libreoffice-calc-nogui (make test installs it as root)`);
    const dir = tmp('vmemlab-soffice-');
    const app = await buildServer({ dataDir: join(dir, 'data'), rateLimit: false, serveApp: false });
    let csv: Buffer;
    try {
      const { code, teacher_token: teacher } = (await app.inject({ method: 'POST', url: '/api/classes', payload: { name: 'LibreOffice' } })).json();
      for (const n of [...HOSTILE, '山田太郎', '张伟']) {
        const r = await app.inject({ method: 'POST', url: '/api/results', payload: resultWith((d) => { d.probe.cpu.model_name = HOSTILE.includes(n) ? n : 'AMD EPYC'; }), headers: { 'content-type': 'application/json', 'x-vmemlab-class': code, 'x-vmemlab-name': encodeURIComponent(n) } });
        expect(r.statusCode, r.body).toBe(201);
        await new Promise((r2) => setTimeout(r2, 3)); // upload order = row order
      }
      csv = (await app.inject({ method: 'GET', url: `/api/classes/${code}/export.csv`, headers: { authorization: `Bearer ${teacher}` } })).rawPayload;
    } finally { await app.close(); }
    writeFileSync(join(dir, 'export.csv'), csv);
    // a control: the same spreadsheet does run a formula left as it was
    writeFileSync(join(dir, 'control.csv'), '\uFEFFid,name\r\na,=1+1\r\n');

    // As a double-click opens a .csv: LibreOffice's text import with its defaults (comma,
    // double quotes, formulas evaluated), the character set left to it (it reads the BOM, as
    // its import dialog does); its own profile, so that no user's settings count.
    const open = (sep: number, out: string) => {
      const r = spawnSync('soffice', [`-env:UserInstallation=file://${join(dir, 'profile')}`, '--headless', '--norestore',
        `--infilter=Text - txt - csv (StarCalc):${sep},34,,1`, '--convert-to', 'fods', '--outdir', join(dir, out),
        join(dir, 'export.csv'), join(dir, 'control.csv')], { encoding: 'utf8', timeout: 120_000 });
      expect(r.error, r.stderr).toBeUndefined();
      expect(r.status, r.stderr).toBe(0);
      return { sheet: fodsCells(readFileSync(join(dir, out, 'export.fods'), 'utf8')), control: fodsCells(readFileSync(join(dir, out, 'control.fods'), 'utf8')) };
    };

    const { sheet, control } = open(44, 'comma');
    expect(control[1][1]).toMatchObject({ formula: 'of:=1+1', text: '2' }); // the harness sees a formula that ran
    expect(sheet[0].slice(0, 3).map((c) => c.text)).toEqual(['id', 'name', 'uploaded_utc']); // the BOM is not shown
    const col = (name: string) => CSV_COLUMNS.indexOf(name);
    const rows = sheet.slice(1, 9);
    expect(rows.map((r) => r[col('name')].text)).toEqual([...NAMES_NEUTRALISED, '山田太郎', '张伟']);
    expect(rows.map((r) => r[col('cpu_model')].text)).toEqual([...NEUTRALISED, 'AMD EPYC', 'AMD EPYC']);
    expect(rows.map((r) => [r[col('name')].type, r[col('cpu_model')].type])).toEqual(Array(8).fill(['string', 'string']));
    for (const r of sheet) for (const c of r) expect(c.formula, c.text).toBeNull();
    for (const r of rows) expect(r[col('mem_mib')]).toMatchObject({ text: '64', type: 'float' }); // numbers stay numbers

    // a spreadsheet that splits on ; sees no formula either
    const semi = open(59, 'semicolon');
    expect(semi.sheet.flat().filter((c) => c.formula !== null)).toEqual([]);
    expect(semi.sheet.flat().some((c) => c.text === "'=1+1")).toBe(true);
    expect(semi.sheet.flat().some((c) => c.text.includes('山田太郎'))).toBe(true);
  }, 300_000);
});
