/* Shared by the class-server tests: a throwaway PostgreSQL cluster on a loopback port
 * (Debian's postgresql package; as root the cluster runs as the postgres user), real
 * hw-lab results, and a small request helper. */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const root = join(__dirname, '..', '..');
export const fixture = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'result-quick.json'), 'utf8'));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => { const p = (s.address() as { port: number }).port; s.close(() => resolve(p)); });
  });
}

function pgBin(name: string): string {
  const base = '/usr/lib/postgresql';
  if (existsSync(base)) {
    const v = readdirSync(base).sort((a, b) => Number(b) - Number(a))[0];
    if (v && existsSync(join(base, v, 'bin', name))) return join(base, v, 'bin', name);
  }
  const w = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  if (w.status === 0) return w.stdout.trim();
  throw new Error(`PostgreSQL's ${name} is not installed: apt-get install -y postgresql (make test does this as root)`);
}

export interface Pg {
  url: (db: string) => string; createDb: (db: string) => void; stop: () => void;
  /** One SQL statement through psql; its rows as text, one a line. */
  psql: (db: string, sql: string) => string;
  /** pg_ctl stop -m immediate (a crash of the database) and start again on the same port. */
  halt: () => void; resume: () => void;
  /** SIGSTOP to every process of the cluster (postmaster and backends): the database stops
   * answering while its sockets stay open, as on a frozen host. thaw() sends SIGCONT. */
  freeze: () => void; thaw: () => void;
}

/** The postmaster (first line of postmaster.pid) and its children, found in /proc. */
function clusterPids(data: string): number[] {
  let postmaster: number;
  try { postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]); } catch { return []; }
  if (!(postmaster > 0)) return [];
  const children: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    let stat: string;
    try { stat = readFileSync(`/proc/${e}/stat`, 'utf8'); } catch { continue; } // gone meanwhile
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === postmaster) children.push(Number(e));
  }
  return [postmaster, ...children];
}
function signalAll(pids: number[], signal: NodeJS.Signals) {
  for (const pid of pids) { try { process.kill(pid, signal); } catch { /* already gone */ } }
}

/** initdb + pg_ctl start on 127.0.0.1:<free port>, unix socket in the cluster folder. */
export async function startPostgres(): Promise<Pg> {
  const initdb = pgBin('initdb'); const pgctl = pgBin('pg_ctl'); const psql = pgBin('psql');
  const dir = mkdtempSync(join(tmpdir(), 'vmemlab-pg-'));
  chmodSync(dir, 0o777);
  const asRoot = process.getuid?.() === 0;
  const run = (cmd: string, args: string[]) => {
    const full = asRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] as const : [cmd, args] as const;
    return execFileSync(full[0], full[1] as string[], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], cwd: dir });
  };
  const data = join(dir, 'data');
  run(initdb, ['-D', data, '-A', 'trust', '-U', 'vmemlab', '--no-sync', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  const start = () => run(pgctl, ['-D', data, '-l', join(dir, 'log'), '-w', '-t', '30', '-o',
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=250`, 'start']);
  start();
  const url = (db: string) => `postgres://vmemlab@127.0.0.1:${port}/${db}`;
  const sql = (db: string, q: string) => run(psql, ['-h', '127.0.0.1', '-p', String(port), '-U', 'vmemlab', '-d', db, '-qAtc', q]);
  return {
    url,
    createDb: (db) => { sql('postgres', `CREATE DATABASE ${db}`); },
    psql: sql,
    halt: () => { run(pgctl, ['-D', data, '-m', 'immediate', '-w', 'stop']); },
    resume: start,
    // The postmaster first, so that it starts no new backend while they are stopped.
    freeze: () => {
      const pids = clusterPids(data);
      if (!pids.length) throw new Error('no running PostgreSQL cluster to freeze');
      signalAll(pids.slice(0, 1), 'SIGSTOP'); signalAll(clusterPids(data).slice(1), 'SIGSTOP');
    },
    thaw: () => { signalAll(clusterPids(data), 'SIGCONT'); },
    // A frozen cluster is thawed first: a stopped postmaster would never act on pg_ctl stop.
    stop: () => {
      try { signalAll(clusterPids(data), 'SIGCONT'); run(pgctl, ['-D', data, '-m', 'immediate', '-w', 'stop']); } finally { rmSync(dir, { recursive: true, force: true }); }
    },
  };
}

/** A copy of the fixture with changes, as the exact bytes a client would send. */
export function resultWith(mutate: (r: typeof fixture) => void = () => {}): string {
  const r = structuredClone(fixture);
  mutate(r);
  return JSON.stringify(r);
}

/** One event of an event stream: its name ("message" unless named), id and data text. */
export interface SseEvent { event: string; id?: string; data: string }
/** Reads an event stream's body as it comes, calling `event` for each event that has data
 * and `comment` for each comment line (": ..."), until the body ends or is aborted. */
export async function readSse(body: ReadableStream<Uint8Array>, on: { event: (e: SseEvent) => void; comment?: (text: string) => void }): Promise<void> {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buf += value;
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut); buf = buf.slice(cut + 2);
        const ev: SseEvent = { event: 'message', data: '' };
        let hasData = false;
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) { on.comment?.(line.slice(1).trim()); continue; }
          const colon = line.indexOf(':');
          const key = colon < 0 ? line : line.slice(0, colon);
          const val = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (key === 'event') ev.event = val; else if (key === 'id') ev.id = val; else if (key === 'data') { ev.data = val; hasData = true; }
        }
        if (hasData) on.event(ev);
      }
    }
  } catch { /* aborted */ }
}
