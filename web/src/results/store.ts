/* The learner's own results, kept in IndexedDB across reloads; class receipts and teacher
 * tokens in localStorage (they are small and per class). */
import type { HwResult } from './validate';

/** One kept result. idem: the Idempotency-Key its uploads carry (one random key per file,
 * so that a second click, or a retry after a lost answer, stores nothing new). */
export interface Stored { key: number; label: string; added: string; result: HwResult; idem?: string }
const DB = 'vmemlab-results';

/** A failure of this module's own (the page words it from `key`, results namespace); the
 * browser's own errors pass through as they are. */
export class StoreError extends Error {
  constructor(readonly key: 'store.unavailable' | 'store.refused', message: string) { super(message); }
}
const STORE = 'results';

function open(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    if (typeof indexedDB === 'undefined') { reject(new StoreError('store.unavailable', 'IndexedDB is not available')); return; }
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => { req.result.createObjectStore(STORE, { keyPath: 'key', autoIncrement: true }); };
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error ?? new StoreError('store.unavailable', 'IndexedDB is not available'));
  });
}
async function tx<T>(mode: IDBTransactionMode, f: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await open();
  try {
    return await new Promise<T>((resolve, reject) => {
      const t = db.transaction(STORE, mode);
      const r = f(t.objectStore(STORE));
      t.oncomplete = () => resolve(r.result);
      t.onerror = () => reject(t.error ?? r.error);
      t.onabort = () => reject(t.error ?? new StoreError('store.refused', 'the browser refused to store the result'));
    });
  } finally { db.close(); }
}
export const listResults = () => tx<Stored[]>('readonly', (s) => s.getAll() as IDBRequest<Stored[]>);
export const addResult = (label: string, result: HwResult) => tx<IDBValidKey>('readwrite', (s) => s.add({ label, added: new Date().toISOString(), result, idem: newIdempotencyKey() }));
export const putResult = (r: Stored) => tx<IDBValidKey>('readwrite', (s) => s.put(r));
export const deleteResult = (key: number) => tx<undefined>('readwrite', (s) => s.delete(key));

/** 128 random bits as base64url (22 characters of [A-Za-z0-9_-]). crypto.getRandomValues
 * works on plain http too (a class server on a LAN), where crypto.randomUUID does not. */
export function newIdempotencyKey(): string {
  const b = crypto.getRandomValues(new Uint8Array(16));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export interface Receipt { id: string; receipt: string; label: string }
const read = <T,>(k: string, d: T): T => { try { const v = localStorage.getItem(k); return v ? JSON.parse(v) as T : d; } catch { return d; } };
const write = (k: string, v: unknown) => { try { localStorage.setItem(k, JSON.stringify(v)); } catch { /* private mode */ } };
export const receipts = (code: string) => read<Receipt[]>(`vmemlab-receipts:${code}`, []);
export const saveReceipts = (code: string, r: Receipt[]) => write(`vmemlab-receipts:${code}`, r);
export const teacherToken = (code: string) => read<string | null>(`vmemlab-teacher:${code}`, null);
export const saveTeacherToken = (code: string, t: string) => write(`vmemlab-teacher:${code}`, t);
export const lastClass = () => read<string | null>('vmemlab-class', null);
/** The display name the student chose for uploads (only their teacher sees it). */
export const studentName = () => read<string>('vmemlab-name', '');
export const saveStudentName = (n: string) => write('vmemlab-name', n);
export const saveLastClass = (c: string) => write('vmemlab-class', c);
/** Forgets a deleted class: its teacher token, receipts and joined student, and the class
 * as the last one opened. */
export function forgetClass(code: string) {
  try {
    for (const k of [`vmemlab-teacher:${code}`, `vmemlab-receipts:${code}`, `vmemlab-student:${code}`]) localStorage.removeItem(k);
    if (lastClass() === code) localStorage.removeItem('vmemlab-class');
  } catch { /* private mode */ }
}
/** The class key of the server this page came from (VMEMLAB_CLASS_KEY), once a teacher
 * typed it: classes are created without asking again. */
export const classKey = () => read<string>('vmemlab-class-key', '');
export const saveClassKey = (k: string) => write('vmemlab-class-key', k);
