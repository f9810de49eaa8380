import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
// cross-origin isolated, as the class server is (web/server/app.mjs): the replay's workers
// share memory
const isolated = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

export default defineConfig({
  root: here,
  base: './',
  plugins: [react()],
  // the trace replay's Web Worker (web/src/trace/replay.worker.ts) is an ES module, so that it
  // can load the engine's module and .wasm as the page does
  worker: { format: 'es' },
  server: { host: '127.0.0.1', port: 8080, fs: { allow: [fileURLToPath(new URL('..', import.meta.url))] }, headers: isolated },
  preview: { host: '127.0.0.1', port: 8080, strictPort: true, headers: isolated },
  build: {
    outDir: 'dist', emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 700,
    // Fonts stay files (KaTeX has some under 4 KiB): the server's CSP allows fonts from
    // 'self' only, and a file is cached and compressed like every other asset.
    assetsInlineLimit: (file) => (/\.(woff2?|ttf|otf)$/.test(file) ? false : undefined),
  },
});
