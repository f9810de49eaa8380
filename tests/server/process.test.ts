/* The class server as a real process on loopback: `hw-lab/run --upload` against it, and a
 * bad setting stopping it with one line. (Its durability under faults: chaos.test.ts.) */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, root } from './helpers';

const dirs: string[] = [];
// hw-lab/run builds its binary first unless told not to; skip that when it is already built.
const noBuild = existsSync(join(root, 'hw-lab', 'build', 'hwlab')) ? ['--no-build'] : [];
const procs: ChildProcess[] = [];
afterAll(() => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function startServer(dataDir: string, port: number): Promise<{ proc: ChildProcess; url: string }> {
  const proc = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', VMEMLAB_DATA_DIR: dataDir, VMEMLAB_RATE_MAX: '0', VMEMLAB_UPLOAD_RATE: '0', DATABASE_URL: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  procs.push(proc);
  let out = '';
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server did not start: ${out}`)), 20_000);
    const on = (d: Buffer) => { out += d; if (out.includes('class server at')) { clearTimeout(t); resolve(); } };
    proc.stdout!.on('data', on); proc.stderr!.on('data', on);
    proc.once('exit', (c) => { clearTimeout(t); reject(new Error(`server exited ${c}: ${out}`)); });
  });
  return { proc, url: `http://127.0.0.1:${port}` };
}

async function createClass(url: string): Promise<{ code: string; teacher_token: string }> {
  const r = await fetch(`${url}/api/classes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"name":"lab"}' });
  expect(r.status).toBe(201);
  return r.json();
}

describe('class server process', () => {
  it('accepts `hw-lab/run --upload URL --class CODE` byte for byte', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-cli-')); dirs.push(dataDir);
    const { proc, url } = await startServer(dataDir, await freePort());
    const { code } = await createClass(url);
    const out = join(dataDir, 'r.json');
    const r = spawnSync(join(root, 'hw-lab', 'run'), [...noBuild, '--quick', '--only', 'cpuid_exit', '--out', out, '--upload', `${url}/api/results`, '--class', code], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    const id = /id=([A-Za-z0-9_-]+)/.exec(r.stderr)?.[1];
    expect(id, r.stderr).toBeTruthy();
    expect(r.stderr).toContain(`class=${code}&mine=${id}`);
    const receipt = /^receipt:\s+(\S+)$/m.exec(r.stdout)?.[1];
    expect(receipt, r.stdout).toBeTruthy();
    const stored = await fetch(`${url}/api/classes/${code}/results/${id}`, { headers: { authorization: `Bearer ${receipt}` } });
    expect(await stored.text()).toBe(readFileSync(out, 'utf8'));
    // a wrong class code is refused with the server's message shown to the learner
    const bad = spawnSync(join(root, 'hw-lab', 'run'), [...noBuild, '--quick', '--only', 'cpuid_exit', '--out', out, '--upload', `${url}/api/results`, '--class', 'WRONG-CODE'], { encoding: 'utf8', timeout: 60_000 });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/HTTP 404.*no class with the code .*WRONG-CODE/);
    proc.kill('SIGTERM');
  });

  it.each([
    [{ VMEMLAB_RATE_MAX: 'abc' }, 'VMEMLAB_RATE_MAX="abc": takes a whole number of requests per minute per client; 0 turns this limit off'],
    [{ TRUST_PROXY: 'true' }, 'TRUST_PROXY="true": trusting every hop lets any client choose its address'],
    [{ VMEMLAB_SQLITE_SYNC: 'OFF' }, 'VMEMLAB_SQLITE_SYNC="OFF": takes FULL'],
  ])('a bad setting stops the server with one line: %o', (env, line) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-cfg-')); dirs.push(dataDir);
    const r = spawnSync(process.execPath, [join(root, 'web', 'server', 'main.mjs')], { env: { ...process.env, PORT: '0', VMEMLAB_DATA_DIR: dataDir, ...env }, encoding: 'utf8', timeout: 20_000 });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain(`vmemlab server failed to start: bad setting: ${line}`);
  });
});
