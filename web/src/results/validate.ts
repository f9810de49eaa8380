/* Checks a dropped or picked result file: JSON syntax (with line and column) and the
 * hw-lab result schema (draft 2020-12), each problem naming its field. The schema is
 * compiled by ajv ahead of time (result-validator.gen.mjs), so no eval runs in the page and
 * the class server's Content-Security-Policy can forbid it. Messages come in the language
 * of the `t` given (English by default); the browser's own JSON.parse message, which has no
 * translation, is kept apart as `detail`. */
import type { ErrorObject } from 'ajv';
import localizeJa from 'ajv-i18n/localize/ja';
import localizeZh from 'ajv-i18n/localize/zh';
import validate from './result-validator.gen.mjs';
import { jsonErrorOffset, lineCol } from '../model/validate';
import type { T } from '../i18n';
import { tEn } from './labels';

/** One problem: the JSON path, what is wrong (translated) and, for a syntax error, the
 * browser's own words (English). */
export interface Problem { path: string; message: string; detail?: string }
export type Check = { ok: true; result: HwResult } | { ok: false; problems: Problem[] };
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type HwResult = Record<string, any>;

/* ajv's messages for keywords this page has no words of its own for. */
const LOCALIZE: Record<string, (errors?: ErrorObject[] | null) => void> = { ja: localizeJa, zh: localizeZh };

/** ajv's message for one error, in the language of t (English: exactly ajv's words). */
function schemaMessage(e: ErrorObject, t: T): string {
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required': return t('check.required');
    case 'additionalProperties': return t('check.unknownField');
    case 'type': return t('check.type', { type: p.type });
    case 'const': return t('check.const');
    case 'enum': return t('check.enum');
    case 'minimum': case 'exclusiveMinimum': case 'maximum': case 'exclusiveMaximum':
      return t('check.limit', { comparison: p.comparison, limit: p.limit });
    case 'minItems': return t('check.minItems', { count: p.limit });
    case 'minLength': return t('check.minLength', { count: p.limit });
    case 'pattern': return t('check.pattern', { pattern: p.pattern });
  }
  return e.message ?? t('check.invalid');
}

/** The longest list (or object) a result may hold anywhere; the class server refuses the
 * same (web/server/app.mjs DOC_MAX_ITEMS). A hw-lab result's lists hold a few dozen items. */
const DOC_MAX_ITEMS = 1024;

/** The first list or object longer than DOC_MAX_ITEMS, without recursion. */
function oversized(root: unknown): { path: string; count: number } | null {
  const stack: [unknown, string][] = [[root, '']];
  while (stack.length) {
    const [v, path] = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    const keys = Object.keys(v);
    if (keys.length > DOC_MAX_ITEMS) return { path, count: keys.length };
    for (const k of keys) stack.push([(v as Record<string, unknown>)[k], `${path}/${k}`]);
  }
  return null;
}

/** Checks `text` as a hw-lab result; `lang` picks ajv's own translations for the schema
 * keywords this page does not word itself. */
export function checkResult(text: string, t: T = tEn, lang = 'en'): Check {
  let value: unknown;
  try { value = JSON.parse(text); } catch (e) {
    const at = jsonErrorOffset(text);
    const where = at >= 0 ? lineCol(text, at) : null;
    return { ok: false, problems: [{ path: '', message: where ? t('check.jsonAt', { line: where.line, col: where.col }) : t('check.json'), detail: (e as Error).message }] };
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return { ok: false, problems: [{ path: '', message: t('check.object') }] };
  const v = value as HwResult;
  if (v.format !== 'vmemlab-hw-lab-result') return { ok: false, problems: [{ path: '/format', message: t('check.format', { format: 'vmemlab-hw-lab-result' }) }] };
  if (v.schema_version !== 1) return { ok: false, problems: [{ path: '/schema_version', message: t('check.version', { value: JSON.stringify(v.schema_version ?? null), version: 1 }) }] };
  // A list of 80,000 items would have the schema report each of them: refused at once.
  const big = oversized(v);
  if (big) return { ok: false, problems: [{ path: big.path, message: t('check.tooMany', { count: big.count, max: DOC_MAX_ITEMS }) }] };
  if (validate(v)) return { ok: true, result: v };
  const errors = [...(validate.errors ?? [])];
  LOCALIZE[lang]?.(errors);
  const problems: Problem[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'if') continue;
    let path = e.instancePath;
    if (e.keyword === 'required') path = `${e.instancePath}/${(e.params as { missingProperty: string }).missingProperty}`;
    else if (e.keyword === 'additionalProperties') path = `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`;
    const message = schemaMessage(e, t);
    const k = path + message;
    if (!seen.has(k)) { seen.add(k); problems.push({ path, message }); }
  }
  return { ok: false, problems };
}
