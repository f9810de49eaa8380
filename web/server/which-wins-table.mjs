// The table of which-wins answers the grader ships (web/server/gen/which-wins.json), and the
// check that it belongs to the grader and engine it is read with.
//
// which-wins has a finite list of variants (each a fixed stream that many seeds share: 72
// for the three programs), and the answer of each is the engine's alone, so it is worked
// out once, here, at build time (`make web/server/gen/which-wins.json`, a step of `make
// build`): `node web/server/which-wins-table.mjs` runs every variant of every which-wins
// exercise the lessons declare through the grading bundle (gen/grade.mjs, whichWinsAnswers)
// and the engine (vmsim.wasm). The server's grader then looks a record's answer up by its
// variant (generate()'s own choice from the seed) instead of 40-160 ms of engine time.
//
// The table names what it was made from: the SHA-256 of the bundle and of the wasm. A
// table that is missing, unreadable or made from other files (a bundle or engine rebuilt
// without it) is not used: the grader says so in one line and works which-wins out with
// the engine, as before there was a table (keeping each variant's answer once worked out).
// tests/server/which-wins-table.test.ts checks the table against the engine's whole results.
import { createHash } from 'node:crypto';
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const BUNDLE = new URL('./gen/grade.mjs', import.meta.url);
export const WASM = new URL('../../wasm-core/build/wasm/vmsim.wasm', import.meta.url);
export const TABLE = new URL('./gen/which-wins.json', import.meta.url);
const FORMAT = 1;

const sha256 = (bytes) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

/** What a table is made from: the grading bundle's and the engine's bytes, hashed. */
export const tableInputs = (bundleBytes, wasmBytes) => ({ grader: sha256(bundleBytes), engine: sha256(wasmBytes) });

/**
 * The table at `path` if it was made from these inputs ({ answers }), else why not
 * ({ why }: "missing", "unreadable: ...", or which input changed since it was made).
 */
export function readWhichWinsTable(path, inputs) {
  let text;
  try { text = readFileSync(path, 'utf8'); } catch (e) { return { why: e?.code === 'ENOENT' ? 'missing' : `unreadable: ${e?.message ?? e}` }; }
  let t;
  try { t = JSON.parse(text); } catch (e) { return { why: `unreadable: ${e?.message ?? e}` }; }
  if (t?.format !== FORMAT || typeof t.answers !== 'object' || !t.answers || typeof t.inputs !== 'object' || !t.inputs) return { why: `unreadable: not a table of format ${FORMAT}` };
  if (t.inputs.grader !== inputs.grader) return { why: 'stale: made from another grading bundle (gen/grade.mjs was rebuilt since)' };
  if (t.inputs.engine !== inputs.engine) return { why: 'stale: made from another engine (vmsim.wasm was rebuilt since)' };
  return { answers: t.answers };
}

/** Works the table out with the bundle and engine at their built paths and writes it (whole or not at all). */
export async function writeWhichWinsTable(out = TABLE) {
  const bundleBytes = readFileSync(BUNDLE); const wasmBytes = readFileSync(WASM);
  const { whichWinsAnswers } = await import(BUNDLE.href);
  const t0 = performance.now();
  const answers = await whichWinsAnswers(wasmBytes);
  const n = Object.keys(answers).length;
  const table = { format: FORMAT, about: 'which-wins answers by variant, made by web/server/which-wins-table.mjs; do not edit', inputs: tableInputs(bundleBytes, wasmBytes), variants: n, answers };
  const path = fileURLToPath(out);
  writeFileSync(`${path}.tmp`, `${JSON.stringify(table, null, 1)}\n`);
  renameSync(`${path}.tmp`, path);
  return { path, variants: n, ms: performance.now() - t0 };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { path, variants, ms } = await writeWhichWinsTable();
  console.log(`which-wins table: ${variants} variants in ${(ms / 1000).toFixed(1)} s -> ${path}`);
}
