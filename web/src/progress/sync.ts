/* Sends the learner's queued progress records (db.ts's outbox) to the class server, at most
 * 50 a request, oldest first. A record leaves the outbox only once the server has answered
 * that it has it (each record has its own id and the server stores an id once, so a batch
 * sent twice, after a lost answer or from two tabs, is stored once). While the browser is
 * offline, or the server answers 503, 429 or not at all, the records stay and are sent
 * again later: after Retry-After when the server gives one, else after 1, 2, 4 ... up to
 * 60 s (with some jitter, so that a classroom does not come back all at once), and at once
 * when the browser comes back online. A reload starts where the outbox is. */
import { ApiError, sendProgress, type Graded } from './api';
import { unqueue, waiting, type Outgoing } from './db';
import { forgetStudent, studentOf } from './student';
import { setStanding, standingOf } from '../course/standing';

export const BATCH = 50;
/** The backoff; tests make it short. */
export const timing = { firstDelayMs: 1000, maxDelayMs: 60_000 };

let started = false;
let running: Promise<void> | null = null;
let again = false;
let timer: ReturnType<typeof setTimeout> | undefined;
let failures = 0;
let retryAfterS: number | null = null;
const gradedListeners = new Set<(code: string, graded: Graded[]) => void>();

/** Calls `f` with the server's verdicts of each batch it stored. */
export function onGraded(f: (code: string, graded: Graded[]) => void): () => void { gradedListeners.add(f); return () => { gradedListeners.delete(f); }; }

/** Starts sending (once per page; later calls send now): what is queued goes out, and
 * goes out again whenever the browser comes back online. */
export function startSync(): Promise<void> {
  if (!started && typeof window !== 'undefined') {
    started = true;
    window.addEventListener('online', () => { failures = 0; void kick(); });
  }
  return kick();
}

/** Sends what is queued now (a send under way goes on, and looks again when it is done). */
export function kick(): Promise<void> {
  clearTimeout(timer);
  timer = undefined;
  if (running) { again = true; return running; }
  running = (async () => {
    do { again = false; await flush(); } while (again);
  })().finally(() => { running = null; });
  return running;
}

function schedule() {
  const backoff = Math.min(timing.maxDelayMs, timing.firstDelayMs * 2 ** Math.min(failures - 1, 16));
  const delay = retryAfterS !== null ? retryAfterS * 1000 : backoff;
  retryAfterS = null;
  clearTimeout(timer);
  timer = setTimeout(() => { void kick(); }, Math.round(delay * (0.75 + Math.random() / 2)));
}

type Outcome = 'sent' | 'retry' | 'skip';
const retryable = (status: number) => status === 0 || status === 408 || status === 429 || status >= 500;

/** One batch of one class: sent (and out of the outbox), to try again later, or skipped. */
async function send(code: string, receipt: string, batch: Outgoing[]): Promise<Outcome> {
  try {
    const res = await sendProgress(code, receipt, batch.map((o) => o.record));
    await unqueue(batch.map((o) => o.id));
    failures = 0;
    for (const f of gradedListeners) f(code, res.records);
    return 'sent';
  } catch (e) {
    const status = e instanceof ApiError ? e.status : 0;
    if (status === 409 && e instanceof ApiError && e.need === 'open_class') {
      // The class (or this lesson) closed: the records stay in this browser, marked not
      // sent, and go out only when the learner asks (never later unasked).
      const b = e.body ?? {};
      setStanding(code, { kind: 'closed', closed_at: typeof b.closed_at === 'string' ? b.closed_at : null, lesson: typeof b.lesson === 'string' ? b.lesson : null, seen: new Date().toISOString() });
      return 'skip';
    }
    if (retryable(status) || status === 409) {
      // the server away, busy or limiting, the network down
      failures++;
      retryAfterS = e instanceof ApiError ? e.retryAfter : null;
      return 'retry';
    }
    if (status === 404) {
      // The class is gone (deleted by its teacher): nothing of it can be stored any more.
      // The learner's answers stay in this browser, and so does who they were (the
      // exercises on screen keep their variants); the page says what happened.
      setStanding(code, { kind: 'deleted', seen: new Date().toISOString() });
      return 'skip';
    }
    if (status === 401 || status === 403) {
      // this student was removed (from another browser): the records wait for the learner
      // to join again, and then go out as that student's
      forgetStudent(code);
      return 'skip';
    }
    // A record the server refuses (400, 413, 415, 422) will never be taken: a batch is
    // sent again one record at a time, so that only the refused ones are dropped.
    if (batch.length > 1) {
      for (const o of batch) {
        const r = await send(code, receipt, [o]);
        if (r !== 'sent') return r;
      }
      return 'sent';
    }
    console.warn(`vmemlab: the class server refused a progress record (${(e as Error).message}); it stays in this browser only`);
    await unqueue([batch[0].id]);
    return 'sent';
  }
}

async function flush() {
  if (typeof navigator !== 'undefined' && navigator.onLine === false) return; // 'online' sends
  for (;;) {
    const all = await waiting();
    let sent = false;
    for (const code of new Set(all.map((o) => o.code))) {
      const student = studentOf(code);
      if (!student) continue; // not (or no longer) a student of it here: kept for a rejoin
      // Deleted, or closed: kept here until the learner asks (a lesson closed on its own
      // holds back only that lesson's records).
      const st = standingOf(code);
      if (st && (st.kind === 'deleted' || !st.lesson)) continue;
      const mine = all.filter((o) => o.code === code && !(st && o.record.lesson === st.lesson));
      if (!mine.length) continue;
      const r = await send(code, student.receipt, mine.slice(0, BATCH));
      if (r === 'retry') { schedule(); return; }
      if (r === 'sent') sent = true;
    }
    if (!sent) return;
  }
}

/** The learner asks to send the records a closed class refused (after the teacher
 * reopened it, or moved its closing time): they go out now. */
export function sendHeld(code: string): Promise<void> {
  setStanding(code, null);
  return kick();
}

/** For tests: stops any retry waiting and forgets the failures. */
export function resetSyncForTests() { clearTimeout(timer); timer = undefined; failures = 0; retryAfterS = null; }
