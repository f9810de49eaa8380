// The real class server (web/server/main.mjs) in a child process on a free port, with its
// SQLite database in a fresh temporary folder: what the browser tests and the benchmarks
// talk to, so they see the compression, headers and CSP a learner gets.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Starts the server; resolves once it listens. `env` adds to (or overrides) its environment. */
export async function startClassServer({ env = {}, timeoutMs = 20_000 } = {}) {
  if (!existsSync(join(root, 'web', 'dist', 'index.html'))) throw new Error('build the app first: make build');
  const dataDir = mkdtempSync(join(tmpdir(), 'vmemlab-server-'));
  const child = spawn(process.execPath, [join(root, 'web', 'server', 'main.mjs')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', VMEMLAB_DATA_DIR: dataDir, DATABASE_URL: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the class server did not start in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const onData = (b) => {
      out += b;
      const m = /class server at (http:\/\/[^\s/]+\/)/.exec(out);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`the class server exited (${code}) before listening:\n${out}`)); });
  });
  child.removeAllListeners('exit');
  const close = () => new Promise((resolve) => {
    const done = () => { rmSync(dataDir, { recursive: true, force: true }); resolve(); };
    if (child.exitCode !== null) return done();
    child.once('exit', done);
    child.kill('SIGTERM');
  });
  return { url, close, child, output: () => out };
}
