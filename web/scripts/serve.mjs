// Serves the built app at http://127.0.0.1:8080 (vite preview, in-process so that
// Ctrl-C stops everything). Build first: `make start` does both.
import { preview } from 'vite';
import { fileURLToPath } from 'node:url';

const port = Number(process.env.PORT ?? 8080);
const server = await preview({
  configFile: fileURLToPath(new URL('../vite.config.ts', import.meta.url)),
  preview: { port, host: '127.0.0.1', strictPort: true },
});
console.log(`vmemlab is at http://127.0.0.1:${port}/  (Ctrl-C to stop)`);
const stop = () => server.httpServer.close(() => process.exit(0));
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
