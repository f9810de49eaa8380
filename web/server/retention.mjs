// VMEMLAB_RETENTION_DAYS: on a server kept from one term to the next, a class with no
// write for that many days (no upload, trace, progress, deletion, close or reopen: its
// last_activity) is deleted with everything in it, as its teacher's Delete would. Off
// unless the setting is given. main.mjs starts the timer: once at start, then hourly.
const DAY_MS = 86_400_000;
export const RETENTION_EVERY_MS = 3_600_000;

/**
 * Deletes the classes idle for `days` days at the store's clock: returns their codes.
 * @param {import('./db.mjs').Store} store
 */
export async function purgeIdle(store, days, log = () => {}) {
  if (!(days > 0)) return [];
  const before = new Date(store.now() - days * DAY_MS).toISOString();
  const gone = [];
  for (const code of await store.idleClasses(before)) {
    const counts = await store.deleteClass(code);
    if (!counts) continue; // deleted meanwhile
    gone.push(code);
    log(`retention: class ${code} had no activity for ${days} days and was deleted (${Object.entries(counts).map(([t, n]) => `${n} ${t}`).join(', ') || 'empty'})`);
  }
  return gone;
}

/**
 * Runs purgeIdle once now and then every hour until the server closes; a run never
 * overlaps the one before, and one that fails (the database away) is logged and tried
 * again at the next hour. Returns a function that stops it (also called when the
 * server's socket closes).
 * @param {import('fastify').FastifyInstance & { store: import('./db.mjs').Store }} app
 */
export function startRetention(app, days, { everyMs = RETENTION_EVERY_MS, log = (m) => console.log(m) } = {}) {
  if (!(days > 0)) return () => {};
  let running = null; let stopped = false;
  const run = () => {
    if (running || stopped) return running;
    running = purgeIdle(app.store, days, log)
      .catch((e) => { if (!stopped) log(`retention: the check of idle classes failed (${e.message}); trying again in an hour`); })
      .finally(() => { running = null; });
    return running;
  };
  const timer = setInterval(run, everyMs);
  timer.unref();
  const stop = () => { stopped = true; clearInterval(timer); };
  app.server.once('close', stop);
  log(`retention: classes with no activity for ${days} days are deleted with everything in them (checked at start and hourly)`);
  run();
  return stop;
}
