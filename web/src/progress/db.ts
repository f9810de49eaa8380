/* The learner's progress in the browser (IndexedDB `vmemlab-progress`), in a class or not:
 *   exercises  each exercise variant as it was left (answer, tries, verdict, hint), by
 *              lesson, position and seed, so a reload shows it again
 *   done       each lesson marked done (or unmarked), by lesson
 *   outbox     the records still to send to the class server, kept until it has stored
 *              them (sync.ts), so none is lost to a reload, a closed tab or a server away
 * Where IndexedDB is not there (some private modes), the same is kept in memory for the
 * page's life. */

/** What is sent to the class server (POST /api/classes/{code}/progress). */
export type ProgressRecord =
  | { id: string; type: 'attempt'; lesson: string; exercise: number; kind: string; seed: number; answer: string; tries: number; hint: boolean; shown: boolean; at: string;
      /** the page had opened the hint itself (after a wrong try), Hint not pressed (absent: queued before it was sent) */
      hint_opened?: boolean }
  | { id: string; type: 'done'; lesson: string; done: boolean; at: string };

/** One record waiting to be sent to a class. */
export interface Outgoing { id: string; code: string; record: ProgressRecord; queued: number }

/** An exercise variant as the learner left it. status: what the card said last (null:
 * not checked yet); wrong: wrong tries so far; checks: checks made (the record's tries). */
export interface ExerciseState {
  key: string; lesson: string; exercise: number; seed: number; kind: string;
  answer: string; wrong: number; checks: number; hint: boolean;
  /** the learner pressed Hint (hint alone may be the page opening it after a wrong try) */
  hintAsked?: boolean;
  /** the page opened the hint itself, after a wrong try or a blank check */
  hintOpened?: boolean;
  status: null | 'empty' | 'wrong' | 'correct' | 'answer';
  after?: 'asked' | 'tries'; expected?: string; at: string;
}

export interface DoneMark { lesson: string; done: boolean; at: string }

const DB = 'vmemlab-progress';
const STORES = ['exercises', 'done', 'outbox'] as const;
type StoreName = (typeof STORES)[number];
const KEYS: Record<StoreName, string> = { exercises: 'key', done: 'lesson', outbox: 'id' };

export const exerciseKey = (lesson: string, exercise: number, seed: number) => `${lesson}#${exercise}#${seed}`;

/* The memory fallback: the same three stores as maps. */
const memory: Record<StoreName, Map<string, unknown>> = { exercises: new Map(), done: new Map(), outbox: new Map() };
let opening: Promise<IDBDatabase | null> | null = null;

function open(): Promise<IDBDatabase | null> {
  return (opening ??= new Promise((resolve) => {
    if (typeof indexedDB === 'undefined') { resolve(null); return; }
    let req: IDBOpenDBRequest;
    try { req = indexedDB.open(DB, 1); } catch { resolve(null); return; }
    req.onupgradeneeded = () => { for (const s of STORES) if (!req.result.objectStoreNames.contains(s)) req.result.createObjectStore(s, { keyPath: KEYS[s] }); };
    req.onsuccess = () => {
      const db = req.result;
      // another tab upgrading later: let it, and open again next time
      db.onversionchange = () => { db.close(); opening = null; };
      resolve(db);
    };
    req.onerror = () => resolve(null);
    req.onblocked = () => resolve(null);
  }));
}

/** Runs `f` on the stores in one transaction (all its writes or none), resolving once it
 * has committed. */
async function tx<T>(names: StoreName[], mode: IDBTransactionMode, f: (s: Record<StoreName, IDBObjectStore>) => IDBRequest<T> | void): Promise<T | undefined> {
  const db = await open();
  if (!db) {
    // the fallback: f's requests are made on a stand-in that writes the maps
    let out: T | undefined;
    const fake = (name: StoreName) => ({
      put: (v: Record<string, unknown>) => { memory[name].set(String(v[KEYS[name]]), structuredClone(v)); },
      delete: (k: string) => { memory[name].delete(k); },
      get: (k: string) => { out = structuredClone(memory[name].get(k)) as T; },
      getAll: () => { out = [...memory[name].values()].map((v) => structuredClone(v)) as T; },
    });
    f(Object.fromEntries(names.map((n) => [n, fake(n)])) as unknown as Record<StoreName, IDBObjectStore>);
    return out;
  }
  return new Promise<T | undefined>((resolve, reject) => {
    const t = db.transaction(names, mode);
    const stores = Object.fromEntries(names.map((n) => [n, t.objectStore(n)])) as Record<StoreName, IDBObjectStore>;
    const r = f(stores);
    t.oncomplete = () => resolve(r ? r.result : undefined);
    t.onerror = () => reject(t.error);
    t.onabort = () => reject(t.error ?? new Error('the browser did not keep the progress'));
  });
}

const outboxListeners = new Set<() => void>();
/** Calls `f` whenever the outbox changes (records queued or sent). */
export function onOutboxChange(f: () => void): () => void { outboxListeners.add(f); return () => { outboxListeners.delete(f); }; }
const outboxChanged = () => { for (const f of outboxListeners) f(); };

export async function loadExercise(lesson: string, exercise: number, seed: number): Promise<ExerciseState | undefined> {
  return tx<ExerciseState>(['exercises'], 'readonly', (s) => s.exercises.get(exerciseKey(lesson, exercise, seed)) as IDBRequest<ExerciseState>);
}

/** Keeps an exercise's state and, in a class, queues its record with it (one transaction). */
export async function saveExercise(state: ExerciseState, out?: Outgoing): Promise<void> {
  await tx(out ? ['exercises', 'outbox'] : ['exercises'], 'readwrite', (s) => { s.exercises.put(state); if (out) s.outbox.put(out); });
  if (out) outboxChanged();
}

export async function loadDone(): Promise<DoneMark[]> {
  return (await tx<DoneMark[]>(['done'], 'readonly', (s) => s.done.getAll() as IDBRequest<DoneMark[]>)) ?? [];
}

/** Keeps a lesson's done mark and, in a class, queues its record with it. */
export async function saveDone(mark: DoneMark, out?: Outgoing): Promise<void> {
  await tx(out ? ['done', 'outbox'] : ['done'], 'readwrite', (s) => { s.done.put(mark); if (out) s.outbox.put(out); });
  if (out) outboxChanged();
}

/** The records waiting to be sent, oldest first (of one class, when `code` is given). */
export async function waiting(code?: string): Promise<Outgoing[]> {
  const all = (await tx<Outgoing[]>(['outbox'], 'readonly', (s) => s.outbox.getAll() as IDBRequest<Outgoing[]>)) ?? [];
  return all.filter((o) => code === undefined || o.code === code).sort((a, b) => a.queued - b.queued);
}

/** Takes records out of the outbox (stored by the server, or refused for good). */
export async function unqueue(ids: string[]): Promise<void> {
  if (!ids.length) return;
  await tx(['outbox'], 'readwrite', (s) => { for (const id of ids) s.outbox.delete(id); });
  outboxChanged();
}

let lastQueued = 0;
/** A record as the outbox keeps it for a class (queued: its place in the queue, the time
 * in microseconds, one more than the last when the clock has not moved). */
export function outgoing(code: string, record: ProgressRecord): Outgoing {
  lastQueued = Math.max(lastQueued + 1, Date.now() * 1000);
  return { id: record.id, code: code.toUpperCase(), record, queued: lastQueued };
}

/** 128 random bits as base64url (22 characters): a record's id. crypto.getRandomValues
 * works on plain http too (a class server on a LAN), where crypto.randomUUID does not. */
export function newRecordId(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** For tests: forgets the open database (a reload opens it again). */
export function closeForTests() { void opening?.then((db) => db?.close()); opening = null; }
