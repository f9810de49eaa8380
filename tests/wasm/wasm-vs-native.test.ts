/* The WebAssembly module and the native CLI are one engine built twice: for every
 * example, every invalid example and a few hundred seeded variations, both must print
 * the same bytes (or reject with the same message). Results must also pass the schema. */
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, beforeAll } from 'vitest';
import Ajv from 'ajv';
import { loadVmsim, ScenarioError, type Vmsim, type Scenario } from '../../wasm-core/js/vmsim';

const root = join(__dirname, '..', '..');
const core = join(root, 'wasm-core');
const vmsimBin = process.env.VMSIM ?? join(core, 'build', 'vmsim');
const examplesDir = join(core, 'examples');

function native(text: string): { status: number; stdout: string; stderr: string } {
  const p = spawnSync(vmsimBin, ['run', '-'], { input: text, encoding: 'utf8' });
  return { status: p.status ?? -1, stdout: p.stdout, stderr: p.stderr };
}

function listJson(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json') && f !== 'expected-errors.json')
    .map((f) => join(dir, f));
}

/* A small seeded PRNG so that a failure names a reproducible case. */
function mulberry32(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/* Variations of a valid example: accesses near its mappings, all ops, both privilege levels. */
function vary(base: Scenario, seed: number): Scenario {
  const rnd = mulberry32(seed);
  const s: Scenario = JSON.parse(JSON.stringify(base));
  const targets = s.guest.mappings.map((m) => BigInt(m.gva));
  const ops = ['read', 'write', 'fetch'] as const;
  s.accesses = Array.from({ length: 8 }, () => {
    const t = targets[Math.floor(rnd() * targets.length)] ?? 0x400000n;
    const off = BigInt(Math.floor(rnd() * 0x3000)) - 0x1000n;
    const gva = t + off < 0n ? t : t + off;
    return { gva: '0x' + gva.toString(16), op: ops[Math.floor(rnd() * 3)], user: rnd() < 0.5 };
  });
  s.name = `${base.name}-v${seed}`;
  return s;
}

let engine: Vmsim;
const ajv = new Ajv({ allErrors: true });
const validateResult = ajv.compile(JSON.parse(readFileSync(join(core, 'schema', 'result.schema.json'), 'utf8')));
const validateScenario = ajv.compile(JSON.parse(readFileSync(join(core, 'schema', 'scenario.schema.json'), 'utf8')));

beforeAll(async () => {
  expect(existsSync(vmsimBin), 'build the engine first: make -C wasm-core native wasm').toBe(true);
  const wasmBinary = readFileSync(join(core, 'build', 'wasm', 'vmsim.wasm'));
  engine = await loadVmsim({ wasmBinary });
});

describe('WASM module vs native CLI', () => {
  it('reports its version', () => {
    expect(engine.version).toMatch(/^vmsim \d+\.\d+\.\d+/);
  });

  for (const file of listJson(examplesDir)) {
    it(`same bytes for ${file.split('/').pop()}`, () => {
      const text = readFileSync(file, 'utf8');
      const n = native(text);
      expect(n.status).toBe(0);
      const w = engine.runText(text);
      expect(w).toBe(n.stdout);
      const result = JSON.parse(w);
      expect(validateResult(result), ajv.errorsText(validateResult.errors)).toBe(true);
      expect(validateScenario(JSON.parse(text)), ajv.errorsText(validateScenario.errors)).toBe(true);
    });
  }

  for (const file of listJson(join(examplesDir, 'invalid'))) {
    it(`same rejection for invalid/${file.split('/').pop()}`, () => {
      const text = readFileSync(file, 'utf8');
      const n = native(text);
      expect(n.status).toBe(2);
      let message = '';
      try {
        engine.runText(text);
      } catch (e) {
        expect(e).toBeInstanceOf(ScenarioError);
        message = (e as Error).message;
      }
      expect(n.stderr.trim()).toBe(`vmsim: <stdin>: ${message}`);
    });
  }

  it('same bytes for 240 seeded variations of the examples', () => {
    const bases = listJson(examplesDir).map((f) => JSON.parse(readFileSync(f, 'utf8')) as Scenario);
    let compared = 0;
    for (let seed = 1; seed <= 240; seed++) {
      const s = vary(bases[seed % bases.length], seed);
      const text = JSON.stringify(s);
      const n = native(text);
      let w: string;
      try {
        w = engine.runText(text);
      } catch (e) {
        expect(n.status, `seed ${seed}: WASM rejected, native did not`).toBe(2);
        expect(n.stderr.trim()).toBe(`vmsim: <stdin>: ${(e as Error).message}`);
        continue;
      }
      expect(n.status, `seed ${seed}: ${n.stderr}`).toBe(0);
      expect(w, `seed ${seed}`).toBe(n.stdout);
      expect(validateResult(JSON.parse(w)), `seed ${seed}: ${ajv.errorsText(validateResult.errors)}`).toBe(true);
      compared++;
    }
    expect(compared).toBeGreaterThan(200);
  });

  it('same bytes with what the caches hold (caches.contents), for every example and its variations', () => {
    const bases = listJson(examplesDir).map((f) => JSON.parse(readFileSync(f, 'utf8')) as Scenario);
    let listed = 0;
    for (const [i, base] of bases.entries()) for (const s of [base, vary(base, 1000 + i)]) {
      const text = JSON.stringify({ ...s, caches: { ...(s.caches ?? { preset: 'x86-server' }), contents: true } });
      const n = native(text);
      expect(n.status, `${s.name}: ${n.stderr}`).toBe(0);
      const w = engine.runText(text);
      expect(w, s.name).toBe(n.stdout);
      const r = JSON.parse(w);
      expect(validateResult(r), `${s.name}: ${ajv.errorsText(validateResult.errors)}`).toBe(true);
      listed += r.accesses.filter((a: { cache_contents?: unknown }) => a.cache_contents).length;
    }
    expect(listed).toBeGreaterThan(100);
  });

  it('run() returns the parsed object and explain() the table', () => {
    const s = JSON.parse(readFileSync(join(examplesDir, 'ept-4k.json'), 'utf8')) as Scenario;
    const r = engine.run(s);
    expect(r.accesses[0].memory_refs).toBe(24);
    expect(r.accesses[0].steps.filter((st) => st.kind === 'read').map((st) => st.ref)).toEqual(
      Array.from({ length: 24 }, (_, i) => i + 1),
    );
    expect(engine.explain(s)).toContain('24 memory references (4 guest + 20 nested)');
  });

  it('a malformed scenario throws ScenarioError and the engine keeps working', () => {
    expect(() => engine.runText('{"name":')).toThrow(ScenarioError);
    expect(() => engine.run({ name: 'x', mode: 'ept' } as unknown as Scenario)).toThrow(/guest: missing/);
    expect(engine.runText(readFileSync(join(examplesDir, 'native-4k.json'), 'utf8'))).toContain('"outcome":"ok"');
  });
});
