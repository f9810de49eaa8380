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
    // the server takes a class key: its field is there before the first Create
    await teacher.getByTestId('class-key').waitFor({ timeout: 20_000 });
    await teacher.getByTestId('class-name').fill('Week 9 lab');
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
    // the teacher's page, open all along, follows both uploads without a reload
    await expect.poll(() => teacher.locator('[data-testid="class-uploads"] tbody tr').count(), { timeout: 30_000 }).toBe(2);
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

/* The whole course, the same way: the teacher loads a roster, a student joins by picking
 * her name on a lab PC and continues on her phone (a second browser, phone-sized) from the
 * device link; the teacher closes the class at a time now past, and the phone's next answer
 * is refused and shown as not sent; the three gradebook files are parsed against their
 * columns; the teacher deletes the class, and the student's page says the teacher did. */
describe('a graded course over the network: roster, two devices, a closing time, the gradebook, a deleted class', () => {
  let teacher: Page; let code = ''; let token = ''; let pc: Page; let phone: Page;
  const L = 'four-address-spaces';
  const roster = 'Student ID,Name,Email\nS001,Aiko Tanaka,aiko@example.edu\nS002,Bea Martin,bea@example.edu\n';

  it('the teacher makes a class and loads the roster (pasted)', async () => {
    ({ page: teacher } = await person());
    await teacher.goto(`${url}/?view=results&lang=en`);
    const made = await teacher.evaluate(async (key) => (await fetch('/api/classes', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Vmemlab-Class-Key': key }, body: JSON.stringify({ name: 'Graded lab' }) })).json(), KEY);
    ({ code, teacher_token: token } = made);
    await teacher.goto(`${url}/?view=results&class=${code}&lang=en#teacher=${token}`);
    await teacher.getByTestId('course-admin').waitFor({ timeout: 30_000 });
    await teacher.getByText('Roster', { exact: true }).click();
    await teacher.getByTestId('roster-text').fill(roster);
    await teacher.getByTestId('roster-load').click();
    await expect.poll(() => teacher.getByTestId('course-said').textContent()).toContain('2 students on the roster');
    await expect.poll(() => teacher.getByTestId('course-scores').locator('tbody tr').count()).toBe(2);
  }, 60_000);

  it('Aiko joins on a lab PC by picking her name, then continues on her phone from the device link, as the same student', async () => {
    ({ page: pc } = await person());
    await pc.goto(`${url}/?view=results&class=${code.replace('-', '').toLowerCase()}&lang=en`);
    await pc.getByTestId('join-code').fill(code.replace('-', ''));
    await pc.getByTestId('join-code').press('Enter'); // a code typed without its dash is the class
    await pc.getByTestId('roster-pick').selectOption({ label: 'Aiko Tanaka' });
    await pc.getByTestId('roster-pick').evaluate((e) => (e as HTMLSelectElement).form!.requestSubmit()); // its Join button
    await pc.getByTestId('student-joined').waitFor({ timeout: 20_000 });
    expect(await pc.getByTestId('class-name').count()).toBe(0); // no "new class" box for a student
    await pc.getByTestId('device-link-open').click();
    const link = await pc.locator('[data-testid="device-link"] a').getAttribute('href');
    expect(link).toMatch(new RegExp(`^${url}/\\?view=results&class=${code}#link=[A-Z2-9]{4}-[A-Z2-9]{4}$`));
    const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
    phone = await ctx.newPage();
    phone.on('pageerror', (e) => pageErrors.push(e.message));
    await phone.goto(link! + '');
    await phone.getByTestId('student-joined').waitFor({ timeout: 20_000 });
    expect(await phone.getByTestId('student-joined').textContent()).toContain('Aiko Tanaka');
    // a phone: the class chart's 11 px labels drawn at 11 px (its viewBox at the width it
    // has), and nothing wider than the screen
    const chart = phone.locator('svg[data-chart="class-strip"]');
    await chart.waitFor({ timeout: 20_000 });
    const scale = await chart.evaluate((e) => e.getBoundingClientRect().width / (e as SVGSVGElement).viewBox.baseVal.width);
    expect(11 * scale).toBeGreaterThanOrEqual(10.9);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth + 1)).toBe(true);
    // on a phone the class comes before the box for result files
    expect(await phone.evaluate(() => document.querySelector('.class-panel')!.getBoundingClientRect().top < document.querySelector('[data-testid="dropzone"]')!.getBoundingClientRect().top)).toBe(true);
    // the same student: the same variant on both devices
    for (const p of [pc, phone]) await p.goto(`${url}/?view=lessons&lesson=${L}&lang=en`);
    const seedOf = async (p: Page) => Number(await p.locator('section.exercise').first().getAttribute('data-seed'));
    await pc.locator('section.exercise').first().waitFor({ timeout: 30_000 });
    await phone.locator('section.exercise').first().waitFor({ timeout: 30_000 });
    expect(await seedOf(phone)).toBe(await seedOf(pc));
    // a tapped dotted term shows its definition (a phone has no hover)
    const term = phone.locator('abbr.term').first();
    await term.tap();
    const shown = await term.evaluate((e) => getComputedStyle(e, '::after').content);
    expect(shown.length).toBeGreaterThan(20);
    expect(shown).toContain((await term.getAttribute('title'))!.slice(0, 20));
    expect(await seedOf(pc)).toBe(seedFor(code, 'Aiko Tanaka', L, 0));
  }, 90_000);

  async function answer(p: Page, exercise: number) {
    const card = p.locator('section.exercise').nth(exercise);
    const kind = (await card.getAttribute('data-kind'))!;
    const seed = Number(await card.getAttribute('data-seed'));
    const { LESSONS } = await import('../../web/src/lessons/content');
    const spec = LESSONS.en[L].parts.filter((x) => x.type === 'exercise')[exercise].spec;
    expect(spec.kind).toBe(kind);
    const expected = check(await testEngine(), generate(spec, seed), '').expected.split(' or ')[0];
    const input = card.getByLabel('Answer');
    if (await input.evaluate((e) => e.tagName === 'SELECT')) await input.selectOption(expected); else await input.fill(expected);
    await card.getByRole('button', { name: 'Check' }).click();
    await expect.poll(() => card.locator('[data-state]').getAttribute('data-state')).toBe('correct');
  }

  it('an answer from each device counts for Aiko; after the closing time the phone\'s answer is refused and shown as not sent', async () => {
    await answer(pc, 0);
    await answer(phone, 1);
    const scores = async () => (await teacher.evaluate(async ([c, tok]) => (await fetch(`/api/classes/${c}/scores`, { headers: { Authorization: `Bearer ${tok}` } })).json(), [code, token])).students;
    await expect.poll(async () => (await scores()).find((s: { name: string }) => s.name === 'Aiko Tanaka').scores?.lessons[L].score, { timeout: 20_000 }).toBe(2);
    // the teacher sets a closing time already past (their clock), refusing late answers
    await teacher.reload();
    await teacher.getByTestId('course-admin').waitFor({ timeout: 30_000 });
    await teacher.getByText('Scoring and closing time').click();
    const past = new Date(Date.now() - 60_000);
    const local = new Date(past.getTime() - past.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await teacher.getByTestId('course-closes').fill(local);
    await teacher.getByTestId('course-save').click();
    await expect.poll(() => teacher.getByTestId('course-said').textContent()).toContain('Saved');
    // the phone tries once more (a reload of the lesson, an answer): refused, kept, said
    await phone.reload();
    await phone.locator('section.exercise').first().waitFor({ timeout: 30_000 });
    const card = phone.locator('section.exercise').first();
    await card.getByLabel('Answer').fill('12345');
    await card.getByRole('button', { name: 'Check' }).click();
    await expect.poll(() => phone.getByTestId('in-class').textContent(), { timeout: 20_000 }).toContain('is closed since');
    expect(await phone.getByTestId('in-class').textContent()).toContain('marked not sent');
    await phone.goto(`${url}/?view=results&class=${code}&lang=en`);
    await expect.poll(() => phone.getByTestId('class-closed-now').textContent(), { timeout: 20_000 }).toContain('not sent: the class is closed');
    expect((await scores()).find((s: { name: string }) => s.name === 'Aiko Tanaka').scores.lessons[L].score).toBe(2);
  }, 90_000);

  it('the three gradebook files parse against their documented columns', async () => {
    const { parse } = await import('csv-parse/sync');
    const file = async (f: string) => parse(await teacher.evaluate(async ([c, tok, fmt]) => (await fetch(`/api/classes/${c}/grades?format=${fmt}`, { headers: { Authorization: `Bearer ${tok}` } })).text(), [code, token, f]), { bom: true }) as string[][];
    const title = 'Four address spaces (four-address-spaces)';
    const plain = await file('plain');
    expect(plain[0].slice(0, 4)).toEqual(['ID', 'Email', 'Name', 'Section']);
    expect(plain[0]).toContain(title);
    expect(plain[0].slice(-3)).toEqual(['Total', 'Possible', 'Late']);
    const aiko = plain.find((r) => r[0] === 'S001')!;
    expect(aiko[plain[0].indexOf(title)]).toBe('2');
    expect(plain.find((r) => r[0] === 'S002')![plain[0].indexOf(title)]).toBe(''); // Bea never joined
    const canvas = await file('canvas');
    expect(canvas[0].slice(0, 5)).toEqual(['Student', 'ID', 'SIS User ID', 'SIS Login ID', 'Section']);
    expect(canvas[1][0]).toBe('Points Possible');
    expect(canvas[1][canvas[0].indexOf(title)]).toBe('2');
    expect(canvas.find((r) => r[2] === 'S001')![canvas[0].indexOf(title)]).toBe('2');
    const moodle = await file('moodle');
    expect(moodle[0].slice(0, 3)).toEqual(['ID number', 'Email address', 'Full name']);
    expect(moodle.find((r) => r[0] === 'S001')!.slice(1, 4)).toEqual(['aiko@example.edu', 'Aiko Tanaka', '2']);
  }, 30_000);

  it('the teacher deletes the class; the student\'s pages say the teacher did it, and keep her answers', async () => {
    await teacher.getByRole('button', { name: 'Delete class…' }).click();
    await teacher.getByTestId('class-delete-confirm').getByRole('button', { name: /for good/ }).click();
    await expect.poll(() => teacher.locator('body').textContent()).toContain('was deleted with everything in it');
    await pc.goto(`${url}/?view=lessons&lesson=${L}&lang=en`);
    await expect.poll(() => pc.getByTestId('in-class').textContent(), { timeout: 20_000 }).toContain(`Your teacher deleted class ${code}`);
    // the answered exercise is still as it was left, in the same variant
    const card = pc.locator('section.exercise').first();
    expect(Number(await card.getAttribute('data-seed'))).toBe(seedFor(code, 'Aiko Tanaka', L, 0));
    await expect.poll(() => card.locator('[data-state]').getAttribute('data-state')).toBe('correct');
    await pc.goto(`${url}/?view=results&class=${code}&lang=en`);
    await expect.poll(() => pc.getByTestId('class-error').textContent(), { timeout: 20_000 }).toContain(`Your teacher deleted class ${code}`);
    expect(await pc.getByTestId('class-error').textContent()).not.toContain('check the code');
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
