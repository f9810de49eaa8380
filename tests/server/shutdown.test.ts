/* Stopping the class server (Ctrl-C, SIGTERM from a service manager): requests in flight
 * finish, and a client that never reads its response cannot hold the process: it exits
 * within a few seconds. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startClassServer } from '../../web/scripts/class-server.mjs';

const built = existsSync(join(__dirname, '..', '..', 'public', 'guest', 'state.bin.zst'));

describe.skipIf(!built)('class server shutdown', () => {
  it('exits on SIGTERM within 5 s while clients hold unread responses', async () => {
    const server = await startClassServer();
    // 8 MB responses whose bodies are never read: their sockets fill and stay busy
    const held = await Promise.all(Array.from({ length: 3 }, () => fetch(server.url + 'guest/state.bin.zst')));
    expect(held.every((r) => r.status === 200)).toBe(true);
    const t0 = Date.now();
    const exited = new Promise<number | null>((r) => server.child.once('exit', (code: number | null) => r(code)));
    server.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5000);
    await server.close();
  }, 30_000);
});
