// Starts the class server: the built app and the results API on http://HOST:PORT
// (default 127.0.0.1:8080). Storage: SQLite under ./data/ unless DATABASE_URL is set.
// Environment: PORT, HOST, DATABASE_URL, VMEMLAB_DATA_DIR, VMEMLAB_RATE_MAX (requests per
// minute per client, 0 = off), VMEMLAB_UPLOAD_RATE, VMEMLAB_SQLITE_SYNC (FULL|NORMAL), TRUST_PROXY=1.
import { buildServer } from './app.mjs';

const port = Number(process.env.PORT ?? 8080);
const host = process.env.HOST ?? '127.0.0.1';
const off = process.env.VMEMLAB_RATE_MAX === '0';

let app;
try {
  app = await buildServer({
    logger: process.env.VMEMLAB_LOG === '1',
    trustProxy: process.env.TRUST_PROXY === '1',
    ...(off ? { rateLimit: false } : {}),
  });
  await app.listen({ port, host });
} catch (e) {
  console.error(`vmemlab server failed to start: ${e.message}`);
  process.exit(1);
}
const addr = app.server.address();
console.log(`vmemlab class server at http://${host}:${addr.port}/ (storage: ${app.store.kind}${app.store.file ? ' ' + app.store.file : ''}; Ctrl-C to stop)`);
// Stop: finish the requests in flight, then exit. A client that never reads its response
// would hold the server forever: after 3 s its connection is cut.
const stop = () => {
  setTimeout(() => app.server.closeAllConnections(), 3000).unref();
  app.close().then(() => process.exit(0), () => process.exit(1));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
