/* A classroom on one machine: two network namespaces joined by a veth pair, one for the
 * class server (listening on 0.0.0.0 as a teacher's machine on a LAN would) and one for the
 * students' and the teacher's browsers. Traffic between them crosses a real network
 * interface, never loopback and never this machine's own addresses; both namespaces are
 * made here and removed after (iproute2, as root). The addresses come from 198.18.0.0/15,
 * the range set aside for testing network devices (RFC 2544), one /30 per test process. */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface Classroom {
  /** The server's address as students type it. */
  serverAddr: string;
  clientAddr: string;
  serverNs: string;
  clientNs: string;
  /** An executable that runs Debian's chromium inside the students' namespace. */
  chromiumInClient: string;
  /** Starts a program inside the server's namespace. */
  spawnInServer: (cmd: string, args: string[], env: Record<string, string>) => ChildProcess;
  /** Runs a program inside the students' namespace and returns its output. */
  runInClient: (cmd: string, args: string[], env?: Record<string, string>) => string;
  teardown: () => void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

export function makeClassroom(chromium = '/usr/bin/chromium'): Classroom {
  if (process.getuid?.() !== 0) throw new Error('the classroom test makes network namespaces: run it as root (CI and make test do)');
  const id = process.pid % 16384;
  const serverNs = `vmemlab-srv-${id}`; const clientNs = `vmemlab-cli-${id}`;
  const hostIf = `vml${id}c`; const srvIf = `vml${id}s`;
  // 198.18.0.0/15: 2^15 /30 networks; this process's is picked by its pid.
  const base = (198 << 24) | (18 << 16) | (id << 2);
  const addr = (n: number) => [(base + n) >>> 24 & 255, (base + n) >>> 16 & 255, (base + n) >>> 8 & 255, (base + n) & 255].join('.');
  const clientAddr = addr(1); const serverAddr = addr(2);
  const dir = mkdtempSync(join(tmpdir(), 'vmemlab-classroom-'));
  const dropNamespaces = () => { for (const ns of [serverNs, clientNs]) { try { ip('netns', 'del', ns); } catch { /* not there */ } } };
  const teardown = () => { dropNamespaces(); rmSync(dir, { recursive: true, force: true }); };
  dropNamespaces(); // namespaces left by a killed run of the same pid
  try {
    ip('netns', 'add', serverNs);
    ip('netns', 'add', clientNs);
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', srvIf);
    ip('link', 'set', hostIf, 'netns', clientNs);
    ip('link', 'set', srvIf, 'netns', serverNs);
    ip('-n', clientNs, 'addr', 'add', `${clientAddr}/30`, 'dev', hostIf);
    ip('-n', serverNs, 'addr', 'add', `${serverAddr}/30`, 'dev', srvIf);
    for (const [ns, dev] of [[clientNs, hostIf], [serverNs, srvIf]]) {
      ip('-n', ns, 'link', 'set', dev, 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
    }
  } catch (e) { teardown(); throw e; }
  const chromiumInClient = join(dir, 'chromium-in-classroom');
  writeFileSync(chromiumInClient, `#!/bin/sh\nexec ip netns exec ${clientNs} ${chromium} "$@"\n`);
  chmodSync(chromiumInClient, 0o755);
  return {
    serverAddr, clientAddr, serverNs, clientNs, chromiumInClient, teardown,
    spawnInServer: (cmd, args, env) => spawn('ip', ['netns', 'exec', serverNs, cmd, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }),
    runInClient: (cmd, args, env = {}) => execFileSync('ip', ['netns', 'exec', clientNs, cmd, ...args], { env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }),
  };
}
