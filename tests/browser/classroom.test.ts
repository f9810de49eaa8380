/* A class on a network, in Chromium: the class server runs in a network namespace of its
 * own, listening on 0.0.0.0 with a class key as a teacher's machine on a LAN would; the
 * teacher's and two students' browsers (three contexts) run in another namespace and reach
 * it at its network address, as students at other machines do (tests/browser/netns.ts:
 * a veth pair, never loopback, never this machine's own addresses). The teacher creates a
 * class (typing the class key once), the students join by the link the page shows, each
 * answers an exercise (one right, one wrong) in the variant their name gives them, one
 * uploads a hw-lab result from the page and the other with hw-lab/run from their machine;
 * the teacher sees both students in the progress grid and the uploads in the class chart
 * and table, and both CSV exports say what was done. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import type { ChildProcess } from 'node:child_process';
import { makeClassroom, type Classroom } from './netns';
import { CHROMIUM } from './chromium';
import { testEngine } from '../../web/src/test/engine';
import { check, generate } from '../../web/src/lessons/exercises';
import { seedFor } from '../../web/src/progress/seed';

const root = join(__dirname, '..', '..');
const KEY = 'lab-key-for-tests';
const LESSON = 'ept-and-npt';
const SPEC = { kind: 'count-refs' as const, mode: 'ept' };

let room: Classroom; let server: ChildProcess; let browser: Browser; let dataDir: string; let url: string;
const pageErrors: string[] = [];

beforeAll(async () => {
  room = makeClassroom(CHROMIUM);
  dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-classroom-data-'));
  server = room.spawnInServer(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    HOST: '0.0.0.0', PORT: '8080', VMEMLAB_DATA_DIR: dataDir, DATABASE_URL: '', VMEMLAB_CLASS_KEY: KEY,
  });
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the class server did not start:\n${out}`)), 20_000);
    const on = (b: Buffer) => { out += b; if (out.includes(`http://${room.serverAddr}:8080/`)) { clearTimeout(timer); resolve(); } };
    server.stdout!.on('data', on); server.stderr!.on('data', on);
    server.once('exit', (c) => { clearTimeout(timer); reject(new Error(`the class server exited (${c}):\n${out}`)); });
  });
  // the server names the address students can use, and never 0.0.0.0
  expect(out).not.toContain('0.0.0.0:8080');
  url = `http://${room.serverAddr}:8080`;
  browser = await chromium.launch({
    executablePath: room.chromiumInClient,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  if (server && server.exitCode === null) { server.kill('SIGTERM'); await new Promise((r) => setTimeout(r, 500)); server.kill('SIGKILL'); }
  room?.teardown();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

async function person(): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(e.message));
  return { ctx, page };
}

describe('a class over the network: teacher and two students in Chromium', () => {
  let teacher: Page; let code = ''; let joinLink = ''; let token = '';

  it('the teacher creates a class with the class key and gets a join link at the network address', async () => {
    ({ page: teacher } = await person());
    await teacher.goto(`${url}/?view=results&lang=en`);
    await teacher.getByTestId('class-name').fill('Week 9 lab');
    await teacher.getByTestId('class-name').press('Enter');
    await teacher.getByTestId('class-key').fill(KEY);
    await teacher.getByTestId('class-key').press('Enter');
    await teacher.getByTestId('class-created').waitFor();
    code = (await teacher.getByTestId('join-code-shown').textContent())!.trim();
    expect(code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    joinLink = await teacher.locator('#join-link-value').inputValue();
    expect(joinLink).toBe(`${url}/?view=results&class=${code}`);
    expect(await teacher.locator('#join-command-value').inputValue()).toBe(`hw-lab/run --upload ${url}/api/results --class ${code}`);
    await expect.poll(() => teacher.getByTestId('join-qr').count()).toBe(1);
    // the page's address is the teacher link: bookmarkable
    const here = new URL(teacher.url());
    expect(here.searchParams.get('class')).toBe(code);
    token = /#teacher=([A-Za-z0-9_-]+)/.exec(here.hash)![1];
    expect(await teacher.locator('#join-teacher-value').inputValue()).toBe(`${url}/?view=results&class=${code}#teacher=${token}`);
  }, 60_000);

  const students: Record<string, Page> = {};
  for (const [name, right] of [['Ana', true], ['Bo', false]] as const) {
    it(`${name} joins by the link and answers the exercise in their own variant (${right ? 'right' : 'wrong'})`, async () => {
      const { page } = await person();
      students[name] = page;
      await page.goto(joinLink + '&lang=en');
      await page.getByTestId('student-join-name').fill(name);
      await page.getByTestId('student-join-name').press('Enter');
      await page.getByTestId('student-joined').waitFor();
      await page.goto(`${url}/?view=lessons&lesson=${LESSON}&lang=en`);
      const card = page.locator(`section.exercise[data-kind="${SPEC.kind}"]`).first();
      await card.waitFor({ timeout: 30_000 });
      const seed = Number(await card.getAttribute('data-seed'));
      expect(seed).toBe(seedFor(code, name, LESSON, 0));
      const expected = check(await testEngine(), generate(SPEC, seed), '').expected;
      await card.getByLabel('Answer').fill(right ? expected : String(Number(expected) + 1));
      await card.getByRole('button', { name: 'Check' }).click();
      await expect.poll(() => card.locator('[data-state]').getAttribute('data-state')).toBe(right ? 'correct' : 'wrong');
    }, 90_000);
  }

  it('Ana uploads a hw-lab result from the page; Bo with hw-lab/run from his machine', async () => {
    const ana = students.Ana;
    await ana.goto(joinLink + '&lang=en');
    await ana.getByTestId('result-file').setInputFiles(join(root, 'tests', 'server', 'fixtures', 'result-quick.json'));
    const button = ana.locator('.upload-row button').first();
    await button.waitFor({ timeout: 30_000 });
    await button.click();
    await expect.poll(() => ana.locator('[data-testid="class-uploads"] tbody tr').count(), { timeout: 20_000 }).toBe(1);
    const out = room.runInClient(join(root, 'hw-lab', 'run'), ['--from', join(root, 'tests', 'server', 'fixtures', 'result-quick.json'), '--upload', `${url}/api/results`, '--class', code, '--name', 'Bo']);
    expect(out).toMatch(/^upload id: [A-Za-z0-9_-]+$/m);
  }, 60_000);

  it('the teacher sees both students in the progress grid and both uploads, named, in the class', async () => {
    await teacher.goto(`${url}/?view=results&class=${code}&lang=en#teacher=${token}`);
    const grid = teacher.getByTestId('dashboard-grid');
    await grid.waitFor({ timeout: 30_000 });
    const row = (n: string) => grid.locator('tbody tr', { hasText: n });
    await expect.poll(() => row('Ana').locator('td.ok').count(), { timeout: 20_000 }).toBe(1);
    await expect.poll(() => row('Bo').locator('td.no').count(), { timeout: 20_000 }).toBe(1);
    expect(await row('Bo').locator('td.ok').count()).toBe(0);
    const uploads = teacher.getByTestId('class-uploads');
    await expect.poll(() => uploads.locator('tbody tr').count(), { timeout: 20_000 }).toBe(2);
    expect(await uploads.locator('td.who').allTextContents()).toEqual(expect.arrayContaining(['Ana', 'Bo']));
    // the chart names the points for the teacher (the fixture, an older hw-lab result, has
    // the fenced cpuid figure and not the published method's)
    await teacher.selectOption('select[aria-label="measure"]', 'cpuid_exit_cycles');
    await expect.poll(() => teacher.locator('svg[data-chart="class-strip"]').textContent()).toMatch(/Ana/);
    expect(await teacher.locator('svg[data-chart="class-strip"]').textContent()).toMatch(/Bo/);
  }, 60_000);

  it('the CSV exports say what was done', async () => {
    const csv = (path: string) => teacher.evaluate(async ([p, tok]) => (await fetch(p, { headers: { Authorization: `Bearer ${tok}` } })).text(), [path, token]);
    const results = await csv(`/api/classes/${code}/export.csv`);
    const names = results.split('\r\n').slice(1).filter(Boolean).map((l) => l.split(',')[1]).sort();
    expect(names).toEqual(['Ana', 'Bo']);
    const progress = (await csv(`/api/classes/${code}/progress.csv`)).replace(/^\uFEFF/, '');
    const [head, ...lines] = progress.split('\r\n').filter(Boolean);
    const cols = head.split(',');
    const rows = lines.map((l) => Object.fromEntries(l.split(',').map((v, i) => [cols[i], v])));
    const attempts = rows.filter((r) => r.type === 'attempt');
    const of = (n: string) => attempts.filter((r) => r.name === n || r.student === n);
    expect(of('Ana').map((r) => r.verdict)).toEqual(['correct']);
    expect(of('Bo').map((r) => r.verdict)).toEqual(['wrong']);
    expect(pageErrors).toEqual([]);
  }, 30_000);
});
