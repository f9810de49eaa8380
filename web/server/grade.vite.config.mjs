// The class server's grading bundle (web/server/gen/grade.mjs, from grade-entry.ts): vite's
// SSR build, so the page's TypeScript (exercises.ts, content.ts with its bundled lessons,
// the engine's JS wrapper) runs under Node as one ES module. Packages (js-yaml) stay
// imports from node_modules. `make web/server/gen/grade.mjs` runs it.
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

const here = fileURLToPath(new URL('.', import.meta.url));
const STUB = '\0grade-no-i18n';

export default defineConfig({
  root: here,
  logLevel: 'warn',
  plugins: [{
    // The exercises' prompts are words for the page (i18next and every locale file); the
    // grading needs none of them, so exercises.ts's one import of i18n.ts is a stub here.
    name: 'grade-no-i18n',
    enforce: 'pre',
    resolveId(id, importer) { return id === '../i18n' && importer?.replace(/\\/g, '/').endsWith('/src/lessons/exercises.ts') ? STUB : null; },
    load(id) { return id === STUB ? 'export const englishFor = () => (key) => key;\n' : null; },
  }],
  build: {
    ssr: fileURLToPath(new URL('./grade-entry.ts', import.meta.url)),
    outDir: fileURLToPath(new URL('./gen', import.meta.url)),
    // gen/ holds the which-wins table made from this bundle too (make keeps it in step)
    emptyOutDir: false,
    target: 'node20',
    minify: false,
    rollupOptions: { output: { entryFileNames: 'grade.mjs', format: 'es' } },
  },
});
