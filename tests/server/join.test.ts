/* Where students join: the addresses the server prints at start and gives the page at
 * GET /api/server. Listening on 0.0.0.0 it must name this machine's interface addresses
 * (never 0.0.0.0, which reaches nothing from a student's machine, nor 127.0.0.1, which is
 * the student's own); on loopback, none and a hint; behind a proxy, the address the client
 * used. The real main.mjs is started with HOST=0.0.0.0 and read from its stdout; every
 * request of this test goes to 127.0.0.1. */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildServer } from '../../web/server/app.mjs';
import { httpUrl, localUrl, studentAddresses } from '../../web/server/netinfo.mjs';
import { root } from './helpers';

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tmp = () => { const d = mkdtempSync(join(tmpdir(), 'vmemlab-join-')); dirs.push(d); return d; };

/** web/server/main.mjs with PORT=0; resolves with its port once it answers on 127.0.0.1
 * (main.mjs prints its lines before it serves anything), and its stdout. */
async function mainServer(env: Record<string, string>): Promise<{ port: number; out: () => string; child: ChildProcess }> {
  const child = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    env: { ...process.env, PORT: '0', VMEMLAB_DATA_DIR: tmp(), DATABASE_URL: '', TRUST_PROXY: '', VMEMLAB_CLASS_KEY: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (b) => { out += b; });
  child.stderr!.on('data', (b) => { out += b; });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no start in 20 s:\n${out}`)), 20_000);
    const poll = setInterval(() => {
      const m = /class server at http:\/\/[^\s/]+:(\d+)\//.exec(out);
      if (m) { clearInterval(poll); clearTimeout(timer); resolve(Number(m[1])); }
    }, 20);
    child.once('exit', (c) => { clearInterval(poll); clearTimeout(timer); reject(new Error(`exited ${c}:\n${out}`)); });
  });
  child.removeAllListeners('exit');
  // Its lines were written before it answered anything; give the pipe a moment to bring them.
  await fetch(`http://127.0.0.1:${port}/api/health`);
  await new Promise((r) => setTimeout(r, 100));
  return { port, out: () => out, child };
}
const serverInfo = async (port: number) => (await fetch(`http://127.0.0.1:${port}/api/server`)).json();
/** The `  http://...` lines printed under "students open one of:". */
const printed = (out: string) => [...out.matchAll(/^ {2}(http:\/\/\S+\/)(?: {2}\((\S+)\))?$/gm)].map((m) => m[1]);

/** An os.networkInterfaces() answer of a classroom laptop with Docker on it. */
const LAPTOP = {
  lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true }, { address: '::1', family: 'IPv6', internal: true }],
  docker0: [{ address: '172.17.0.1', family: 'IPv4', internal: false }],
  wlan0: [
    { address: '192.168.1.23', family: 'IPv4', internal: false },
    { address: 'fe80::1c2:3ff:fe45:6789', family: 'IPv6', internal: false, scopeid: 3 },
    { address: '2001:db8::23', family: 'IPv6', internal: false, scopeid: 0 },
  ],
  eth0: [{ address: '10.0.0.5', family: 'IPv4', internal: false }],
};

describe('netinfo: the addresses students can use', () => {
  it('0.0.0.0: every non-internal IPv4 address, real interfaces before Docker\'s, never 0.0.0.0 or loopback', () => {
    expect(studentAddresses('0.0.0.0', 8080, LAPTOP as never)).toEqual([
      { url: 'http://192.168.1.23:8080/', address: '192.168.1.23', iface: 'wlan0' },
      { url: 'http://10.0.0.5:8080/', address: '10.0.0.5', iface: 'eth0' },
      { url: 'http://172.17.0.1:8080/', address: '172.17.0.1', iface: 'docker0' },
    ]);
  });
  it(':: adds the IPv6 ones in brackets, without link-local addresses a browser cannot open', () => {
    expect(studentAddresses('::', 8080, LAPTOP as never).map((a) => a.url)).toEqual([
      'http://192.168.1.23:8080/', 'http://10.0.0.5:8080/', 'http://[2001:db8::23]:8080/', 'http://172.17.0.1:8080/',
    ]);
  });
  it('a given address is that one; loopback is none', () => {
    expect(studentAddresses('10.0.0.5', 80, LAPTOP as never).map((a) => a.url)).toEqual(['http://10.0.0.5:80/']);
    expect(studentAddresses('2001:db8::23', 80, LAPTOP as never).map((a) => a.url)).toEqual(['http://[2001:db8::23]:80/']);
    for (const h of ['127.0.0.1', '127.0.1.1', '::1', 'localhost']) expect(studentAddresses(h, 80, LAPTOP as never), h).toEqual([]);
    expect(studentAddresses('0.0.0.0', 80, { lo: LAPTOP.lo } as never)).toEqual([]);
  });
  it('this machine\'s own view: 127.0.0.1 for a wildcard, IPv6 in brackets', () => {
    expect(localUrl('0.0.0.0', 8080)).toBe('http://127.0.0.1:8080/');
    expect(localUrl('::', 8080)).toBe('http://127.0.0.1:8080/');
    expect(localUrl('::1', 8080)).toBe('http://[::1]:8080/');
    expect(httpUrl('10.0.0.5', 1)).toBe('http://10.0.0.5:1/');
  });
});

describe('GET /api/server', () => {
  it('answers the addresses, whether only this machine reaches the server, the class key and the proxy', async () => {
    const dir = tmp();
    const wide = await buildServer({ dataDir: dir, rateLimit: false, serveApp: false, host: '0.0.0.0', port: 8080, classKey: 'correct-horse' } as never);
    const a = (await wide.inject({ method: 'GET', url: '/api/server' })).json();
    expect(a).toEqual({ addresses: studentAddresses('0.0.0.0', 8080).map((x) => x.url), loopback_only: false, class_key: true, proxied: false });
    await wide.close();
    const local = await buildServer({ dataDir: dir, rateLimit: false, serveApp: false });
    expect((await local.inject({ method: 'GET', url: '/api/server' })).json()).toEqual({ addresses: [], loopback_only: true, class_key: false, proxied: false });
    await local.close();
    // behind a proxy the address to give is the one the client used (X-Forwarded-Proto, Host)
    const proxied = await buildServer({ dataDir: dir, rateLimit: false, serveApp: false, trustProxy: ['127.0.0.1'] });
    const p = await proxied.inject({ method: 'GET', url: '/api/server', headers: { host: 'lab.example.edu', 'x-forwarded-proto': 'https', 'x-forwarded-for': '10.1.2.3' }, remoteAddress: '127.0.0.1' });
    expect(p.json()).toEqual({ addresses: ['https://lab.example.edu/'], loopback_only: false, class_key: false, proxied: true });
    await proxied.close();
  });
});

describe('main.mjs prints where students join', () => {
  it('HOST=0.0.0.0: one line per interface address, the same as /api/server, never 0.0.0.0', async () => {
    const { port, out } = await mainServer({ HOST: '0.0.0.0', VMEMLAB_CLASS_KEY: 'correct-horse' });
    const info = await serverInfo(port);
    const expected = Object.values(networkInterfaces()).flat()
      .filter((a) => a && !a.internal && a.family === 'IPv4').map((a) => `http://${a!.address}:${port}/`);
    const lines = out().split('\n');
    expect(lines[0]).toMatch(new RegExp(`^vmemlab class server at http://127\\.0\\.0\\.1:${port}/ \\(storage: sqlite `));
    expect(info.loopback_only).toBe(false);
    expect(info.class_key).toBe(true);
    expect(info.proxied).toBe(false);
    expect(new Set(info.addresses)).toEqual(new Set(expected));
    if (expected.length) {
      expect(lines[1]).toBe('students open one of:');
      expect(printed(out())).toEqual(info.addresses);
    } else {
      expect(out()).toMatch(/no network address for 0\.0\.0\.0 yet/);
    }
    expect(out()).not.toContain('0.0.0.0:');
    expect(printed(out()).some((u) => u.startsWith('http://127.'))).toBe(false);
    expect(out()).not.toMatch(/warning/); // a class key is set
    console.log(`printed for HOST=0.0.0.0: ${JSON.stringify(printed(out()))}`);
  });

  it('HOST=::: the IPv6 addresses too, in brackets', async () => {
    const any6 = Object.values(networkInterfaces()).flat().some((a) => a?.family === 'IPv6');
    if (!any6) { console.log('this machine has no IPv6: HOST=:: left out'); return; }
    const { port, out } = await mainServer({ HOST: '::' });
    const info = await serverInfo(port);
    const v6 = Object.values(networkInterfaces()).flat()
      .filter((a) => a && !a.internal && a.family === 'IPv6' && !/^fe[89ab]/i.test(a.address)).map((a) => `http://[${a!.address}]:${port}/`);
    for (const u of v6) expect(info.addresses).toContain(u);
    expect(printed(out())).toEqual(info.addresses);
    expect(out()).toMatch(/^warning: listening on :: without VMEMLAB_CLASS_KEY/m);
  });

  it('on loopback (the default): no student address, and how to open it to a classroom', async () => {
    const { port, out } = await mainServer({ HOST: '127.0.0.1' });
    expect(await serverInfo(port)).toEqual({ addresses: [], loopback_only: true, class_key: false, proxied: false });
    expect(printed(out())).toEqual([]);
    expect(out()).toMatch(/^only this machine can open it; for students on other machines start it with HOST=0\.0\.0\.0 VMEMLAB_CLASS_KEY=/m);
  });

  it('behind a proxy: says students use the proxy\'s address', async () => {
    const { port, out } = await mainServer({ HOST: '127.0.0.1', TRUST_PROXY: '127.0.0.1' });
    expect((await serverInfo(port)).proxied).toBe(true);
    expect(out()).toMatch(/^behind a reverse proxy \(TRUST_PROXY\): students open the address of the proxy$/m);
    expect(printed(out())).toEqual([]);
  });
});
