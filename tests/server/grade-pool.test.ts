/* The grading worker's hand-off (web/server/grade.mjs): the worker holds the record it
 * grades and the next one (WORKER_DEPTH), so that it goes on while the main thread is busy,
 * but never two of one client's: a student who comes while another's backlog is graded
 * waits for at most one record of it. And a batch's timing (VMEMLAB_SERVER_TIMING) adds up. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GradePool, WORKER_DEPTH } from '../../web/server/grade.mjs';
import { root } from './helpers';

type Task = { job: { client: string } };
type Pool = GradePool & { workers: Set<{ tasks: Task[] }>; clients: Map<string, { pending: number }>; graded: number; total: number };
let grader: Pool;
const record = (seed: number) => ({ type: 'attempt', lesson: 'ept-and-npt', exercise: 0, kind: 'count-refs', seed, answer: '24' });
const until = async (cond: () => boolean, ms = 20_000) => { const end = Date.now() + ms; while (!cond()) { if (Date.now() > end) throw new Error('timed out'); await new Promise((r) => setTimeout(r, 2)); } };

beforeAll(async () => {
  if (!existsSync(join(root, 'web', 'server', 'gen', 'grade.mjs'))) throw new Error('the grading bundle is not built: make web/server/gen/grade.mjs');
  grader = new GradePool() as Pool;
  await grader.grade([record(1)], { client: 'warm-up' }); // the worker has loaded the engine
});
afterAll(async () => { await grader?.close(); });

it('a newcomer waits for at most one record of another client\'s backlog; the worker is handed the next record before it asks', async () => {
  expect(WORKER_DEPTH).toBe(2);
  const onWorker = () => [...grader.workers].flatMap((w) => w.tasks.map((t) => t.job.client));
  const backlog = grader.grade(Array.from({ length: 50 }, (_, i) => record(100 + i)), { client: 'backlog' });
  // one client alone: one record on the worker at a time, never two of its own
  let most = 0;
  const watch = setInterval(() => { most = Math.max(most, onWorker().filter((c) => c === 'backlog').length); }, 1);
  await until(() => grader.clients.get('backlog')!.pending <= 45);
  const left = grader.clients.get('backlog')!.pending;
  const timing: { waitMs?: number; gradeMs?: number } = {};
  const first = grader.grade([record(7)], { client: 'newcomer', timing });
  // posted at once, behind the record being graded
  expect(onWorker()).toEqual(['backlog', 'newcomer']);
  const [result] = await first;
  expect(result.verdict).toMatch(/^(correct|wrong)$/);
  const gradedMeanwhile = left - grader.clients.get('backlog')!.pending;
  expect(gradedMeanwhile, 'records of the backlog graded before the newcomer\'s answer').toBeLessThanOrEqual(2);
  expect(timing.waitMs).toBeGreaterThanOrEqual(0);
  expect(timing.waitMs!).toBeLessThan(5); // posted in the same turn
  expect(timing.gradeMs).toBeGreaterThan(0);
  expect((await backlog).length).toBe(50);
  clearInterval(watch);
  expect(most).toBe(1);
  expect(grader.total).toBe(0);
}, 60_000);

it('a worker that stops with two records on it: the one graded fails with why, the next is answered busy, and the pool goes on', async () => {
  // The worker is stopped in the turn the second record is posted to it, and what it sends
  // from then on is not heard (as if it had died grading the first): waiting for the pool's
  // bookkeeping to show two records and then stopping it left the worker time, on a busy
  // machine, to answer both first (then b was answered), and a worker told to stop may still
  // answer the records already in its port.
  type Stoppable = { tasks: Task[]; postMessage: (m: unknown) => void; terminate: () => void; removeAllListeners: (e: string) => void };
  const workers = [...grader.workers] as unknown as Stoppable[];
  expect(workers.length).toBe(1);
  const [w] = workers;
  const post = w.postMessage.bind(w);
  w.postMessage = (m) => { post(m); if (w.tasks.length === 2) { w.removeAllListeners('message'); w.terminate(); } };
  const a = grader.grade(Array.from({ length: 20 }, (_, i) => record(300 + i)), { client: 'a' });
  const b = grader.grade([record(9)], { client: 'b' });
  const [ra, rb] = await Promise.allSettled([a, b]);
  expect(ra.status).toBe('rejected');
  expect(rb.status).toBe('rejected');
  const codes = [ra, rb].map((r) => (r as PromiseRejectedResult).reason.statusCode).sort();
  expect(codes).toEqual([500, 503]); // the one being graded: 500 (the grader stopped); the one after: 503 busy
  expect(grader.workers.has(w as never)).toBe(false);
  await until(() => grader.total === 0);
  const [again] = await grader.grade([record(11)], { client: 'c' });
  expect(again.verdict).toMatch(/^(correct|wrong)$/);
}, 60_000);
