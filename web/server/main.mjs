// Starts the class server: the built app and the results API on http://HOST:PORT
// (default 127.0.0.1:8080). Storage: SQLite under ./data/ unless DATABASE_URL is set.
// Every environment variable is checked first (config.mjs; described in README.md): a bad
// value stops the server with one line that says which and what it takes.
import { buildServer } from './app.mjs';
import { ConfigError, loopbackOnly, readConfig } from './config.mjs';
import { startRetention } from './retention.mjs';
import { localUrl, studentAddresses } from './netinfo.mjs';

let app; let cfg;
try {
  cfg = readConfig(process.env);
  app = await buildServer(cfg);
  await app.listen({ port: cfg.port, host: cfg.host });
} catch (e) {
  console.error(`vmemlab server failed to start: ${e instanceof ConfigError ? 'bad setting: ' : ''}${e.message}`);
  process.exit(1);
}
const addr = app.server.address();
console.log(`vmemlab class server at ${localUrl(cfg.host, addr.port)} (storage: ${app.store.kind}${app.store.file ? ' ' + app.store.file : ''}; Ctrl-C to stop)`);
// Where students on other machines open it: 0.0.0.0 is no address to give them, so each
// address of this machine's interfaces is printed (the page shows the first as a QR code).
const students = studentAddresses(cfg.host, addr.port);
if (cfg.trustProxy) console.log('behind a reverse proxy (TRUST_PROXY): students open the address of the proxy');
else if (students.length) {
  console.log('students open one of:');
  for (const a of students) console.log(`  ${a.url}${a.iface ? `  (${a.iface})` : ''}`);
} else if (loopbackOnly(cfg.host)) console.log('only this machine can open it; for students on other machines start it with HOST=0.0.0.0 VMEMLAB_CLASS_KEY=<a passphrase>');
else console.log(`this machine has no network address for ${cfg.host} yet: students on other machines cannot reach it`);
if (!cfg.classKey && !loopbackOnly(cfg.host)) console.log(`warning: listening on ${cfg.host} without VMEMLAB_CLASS_KEY: anyone who reaches this server can create classes; set VMEMLAB_CLASS_KEY=<a passphrase> to require it`);
// VMEMLAB_RETENTION_DAYS: idle classes are deleted, once now and then hourly (retention.mjs).
startRetention(app, cfg.retentionDays);
// Stop: finish the requests in flight, then exit. A client that never reads its response
// would hold the server forever: after 3 s its connection is cut.
const stop = () => {
  setTimeout(() => app.server.closeAllConnections(), 3000).unref();
  app.close().then(() => process.exit(0), () => process.exit(1));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
