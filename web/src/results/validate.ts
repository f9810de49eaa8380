/* Checks a dropped or picked result file: JSON syntax (with line and column) and the
 * hw-lab result schema (draft 2020-12), each problem naming its field. The schema is
 * compiled by ajv ahead of time (result-validator.gen.mjs), so no eval runs in the page and
 * the class server's Content-Security-Policy can forbid it. */
import validate from './result-validator.gen.mjs';
import { jsonErrorOffset, lineCol } from '../model/validate';

export interface Problem { path: string; message: string }
export type Check = { ok: true; result: HwResult } | { ok: false; problems: Problem[] };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type HwResult = Record<string, any>;


export function checkResult(text: string): Check {
  let value: unknown;
  try { value = JSON.parse(text); } catch (e) {
    const at = jsonErrorOffset(text);
    const where = at >= 0 ? lineCol(text, at) : null;
    return { ok: false, problems: [{ path: '', message: `not valid JSON${where ? ` (line ${where.line}, column ${where.col})` : ''}: ${(e as Error).message}` }] };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { ok: false, problems: [{ path: '', message: 'a hw-lab result is a JSON object' }] };
  const v = value as HwResult;
  if (v.format !== 'vmemlab-hw-lab-result') return { ok: false, problems: [{ path: '/format', message: 'must be "vmemlab-hw-lab-result" (is this a hw-lab result file?)' }] };
  if (v.schema_version !== 1) return { ok: false, problems: [{ path: '/schema_version', message: `${JSON.stringify(v.schema_version ?? null)} is not supported; this page reads schema version 1` }] };
  if (validate(v)) return { ok: true, result: v };
  const problems: Problem[] = [];
  const seen = new Set<string>();
  for (const e of validate.errors ?? []) {
    if (e.keyword === 'if') continue;
    let path = e.instancePath; let message = e.message ?? 'is invalid';
    if (e.keyword === 'required') { path = `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`; message = 'is required but missing'; }
    else if (e.keyword === 'additionalProperties') { path = `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`; message = 'is not a field of this schema'; }
    const k = path + message;
    if (!seen.has(k)) { seen.add(k); problems.push({ path, message }); }
  }
  return { ok: false, problems };
}
