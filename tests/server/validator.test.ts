/* The page's precompiled result validator is generated from hw-lab's schema and agrees with
 * ajv compiling the schema at run time (as the server does). */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { generate, TARGETS } from '../../web/scripts/gen-validator.mjs';
import { checkResult } from '../../web/src/results/validate';
import { resultWith } from './helpers';

describe('precompiled result validator', () => {
  it.each(TARGETS.map((t) => [t.schema.replace('../../', ''), t] as const))('is up to date with %s (npm run gen:validator)', (_n, t) => {
    expect(readFileSync(t.out, 'utf8') === generate(t), `${t.out} is stale: run npm run gen:validator`).toBe(true);
  });
  it('accepts a real result and names the field of each problem', () => {
    expect(checkResult(resultWith()).ok).toBe(true);
    const bad = checkResult(resultWith((r) => { r.timer.freq_hz = 0; delete r.probe.cpu.model_name; r.benchmarks[0].cases[0].metrics[0].count = 0; }));
    expect(bad.ok).toBe(false);
    const lines = !bad.ok ? bad.problems.map((p) => `${p.path}: ${p.message}`) : [];
    expect(lines).toContain('/timer/freq_hz: must be > 0');
    expect(lines).toContain('/probe/cpu/model_name: is required but missing');
    expect(lines.some((l) => l.startsWith('/benchmarks/0/cases/0/metrics/0/count'))).toBe(true);
    expect(checkResult('{"format":"vmemlab-hw-lab-result","schema_version":2}')).toEqual({ ok: false, problems: [{ path: '/schema_version', message: '2 is not supported; this page reads schema version 1' }] });
    expect(checkResult('[1]').ok).toBe(false);
  });
});
