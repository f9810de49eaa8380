/* Scenario checks before the engine sees them: JSON syntax (with line and column) and
 * the JSON Schema (with the path of each bad field). Loaded only by the playground,
 * so ajv stays out of the first page's bundle. */
import type { ErrorObject } from 'ajv';
// Compiled ahead of time by web/scripts/gen-validator.mjs (npm run gen:validator): no eval in
// the page, so the class server's Content-Security-Policy can forbid it.
import scenarioValidator from './scenario-validator.gen.mjs';
import schema from '../../../wasm-core/schema/scenario.schema.json';
import localizeJa from 'ajv-i18n/localize/ja';
import localizeZh from 'ajv-i18n/localize/zh';
import { tEn, type T } from '../i18n';

/* ajv's own messages ("must have required property ...") in the page's language. */
const LOCALIZE: Record<string, (errors?: ErrorObject[] | null) => void> = { ja: localizeJa, zh: localizeZh };

/** One problem: where, what (in the page's language), and the browser's own words when it
 * has some (V8's JSON.parse message, in English; shown beside, marked lang="en"). */
export interface Problem { path: string; message: string; detail?: string }

function validator() {
  return scenarioValidator;
}

export function lineCol(text: string, pos: number): { line: number; col: number } {
  const before = text.slice(0, pos).split('\n');
  return { line: before.length, col: before[before.length - 1].length + 1 };
}

/* V8's JSON.parse messages no longer carry an offset, so a small scanner finds where the
 * text stops being JSON. It only locates; JSON.parse remains the judge. */
export function jsonErrorOffset(text: string): number {
  let i = 0;
  const ws = () => { while (i < text.length && ' \t\n\r'.includes(text[i])) i++; };
  const fail = (): never => { throw i; };
  const lit = (w: string) => { if (text.startsWith(w, i)) i += w.length; else fail(); };
  const str = () => {
    i++;
    while (i < text.length && text[i] !== '"') {
      if (text[i] === '\\') i++;
      else if (text.charCodeAt(i) < 0x20) fail();
      i++;
    }
    if (i >= text.length) fail();
    i++;
  };
  const num = () => {
    const m = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/.exec(text.slice(i));
    if (!m) fail();
    i += m![0].length;
  };
  const value = (): void => {
    ws();
    const c = text[i];
    if (c === '{') {
      i++; ws();
      if (text[i] === '}') { i++; return; }
      for (;;) {
        ws(); if (text[i] !== '"') fail(); str(); ws();
        if (text[i] !== ':') fail(); i++; value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === '}') { i++; return; }
        fail();
      }
    } else if (c === '[') {
      i++; ws();
      if (text[i] === ']') { i++; return; }
      for (;;) {
        value(); ws();
        if (text[i] === ',') { i++; continue; }
        if (text[i] === ']') { i++; return; }
        fail();
      }
    } else if (c === '"') str();
    else if (c === 't') lit('true');
    else if (c === 'f') lit('false');
    else if (c === 'n') lit('null');
    else num();
  };
  try {
    value(); ws();
    return i < text.length ? i : -1;
  } catch (at) {
    return at as number;
  }
}

/** Parses text as JSON; on failure a problem that says where. */
export function parseJson(text: string, t: T = tEn): { value: unknown; problem: Problem | null } {
  try {
    return { value: JSON.parse(text), problem: null };
  } catch (e) {
    const msg = (e as Error).message;
    const at = jsonErrorOffset(text);
    const where = at >= 0 ? lineCol(text, at) : null;
    return {
      value: undefined,
      problem: { path: '', message: where ? t('json.invalidAt', { line: where.line, col: where.col }) : t('json.invalid'), detail: msg },
    };
  }
}

/* Every pattern of the scenario schema, in words (a learner never sees a regex). A pattern
 * added to the schema without words here fails web/src/model/model.test.ts. */
export const PATTERN_WORDS: Record<string, string> = {
  '^0[xX][0-9a-fA-F]{1,16}$': 'json.pattern.hex',
  '^(?!.*(.).*\\1)[rwx]*$': 'json.pattern.perm',
  '^(0|[1-9][0-9]{0,3})$': 'json.pattern.entryIndex',
};

/* The subschema an error's schemaPath points at ("#/allOf/1/then/allOf/0/not"). */
function at(schemaPath: string): unknown {
  let node: unknown = schema;
  for (const part of schemaPath.replace(/^#\/?/, '').split('/').filter(Boolean)) node = (node as Record<string, unknown> | undefined)?.[part];
  return node;
}

/* A "not" of the schema in words: which key is not allowed, and when (the mode of the
 * if/then/else it sits in). */
function describeNot(e: ErrorObject, t: T): string {
  const not = at(e.schemaPath) as { required?: string[]; anyOf?: { required: string[] }[] } | undefined;
  const keys = not?.required ?? not?.anyOf?.flatMap((x) => x.required) ?? [];
  if (e.schemaPath.startsWith('#/properties/guest/oneOf')) return t('json.not.guestTables');
  const branch = /^(#\/allOf\/\d+)\/(then|else)\//.exec(e.schemaPath);
  const mode = branch ? (at(`${branch[1]}/if/properties/mode`) as { const?: string; enum?: string[] } | undefined) : undefined;
  const modes = mode?.const ? [mode.const] : mode?.enum ?? [];
  const when = !modes.length ? '' : branch![2] === 'then' ? t('json.when.mode', { mode: modes.join('/') }) : t('json.when.notMode', { mode: modes.join('/') });
  return t('json.not.key', { key: keys.join('", "'), when });
}

function describe(e: ErrorObject, t: T): Problem {
  const path = e.instancePath || '/';
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'additionalProperties')
    return { path, message: t('json.unknownKey', { key: params.additionalProperty }) };
  if (e.keyword === 'enum')
    return { path, message: t('json.oneOf', { values: (params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ') }) };
  if (e.keyword === 'pattern') {
    const key = PATTERN_WORDS[String(params.pattern)];
    const name = (e as ErrorObject & { propertyName?: string }).propertyName;
    return { path: name !== undefined ? `${path}/${name}` : path, message: key ? t(key, { name: name ?? '' }) : t('json.pattern.other') };
  }
  if (e.keyword === 'const') return { path, message: t('json.const', { value: JSON.stringify(params.allowedValue) }) };
  if (e.keyword === 'not') return { path, message: describeNot(e, t) };
  return { path, message: e.message ?? e.keyword };
}

/* What a guest lacks (or has too many of) among its two ways of giving tables: "mappings"
 * (with "overrides", "table_base", "address_spaces"), or "tables" with "cr3". */
function guestTablesWords(g: Record<string, unknown>, t: T): string {
  const has = (k: string) => g[k] !== undefined;
  const mappingsOnly = ['overrides', 'table_base', 'address_spaces'].filter(has);
  if (has('mappings') && (has('tables') || has('cr3'))) return t('json.not.guestTables');
  if (has('mappings')) return t('json.not.guestTables');   // not reached: mappings alone is valid
  if (has('tables') && !has('cr3')) return t('json.not.guest.noCr3');
  if (has('cr3') && !has('tables')) return t('json.not.guest.noTables');
  if (has('tables') && mappingsOnly.length) return t('json.not.guest.withTables', { key: mappingsOnly.join('", "') });
  return t('json.not.guest.none');
}

/** Schema problems, most specific first, one per path (oneOf branches repeat themselves). */
export function schemaProblems(value: unknown, t: T = tEn, lang = 'en'): Problem[] {
  const v = validator();
  if (v(value)) return [];
  const all = [...(v.errors ?? [])] as ErrorObject[];
  LOCALIZE[lang]?.(all);
  // oneOf/if/propertyNames only repeat what the errors inside them say
  let errs = all.filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'if' && e.keyword !== 'propertyNames');
  const seen = new Set<string>();
  const out: Problem[] = [];
  // The guest's two ways of giving tables fail as a whole: one sentence that says exactly
  // what is missing or extra, not each branch's required keys as if all were needed.
  const guestWay = (e: ErrorObject) => e.instancePath === '/guest' && e.schemaPath.startsWith('#/properties/guest/oneOf/');
  if (errs.some(guestWay)) {
    errs = errs.filter((e) => !guestWay(e));
    out.push({ path: '/guest', message: guestTablesWords((value as { guest?: Record<string, unknown> }).guest ?? {}, t) });
    seen.add('/guest' + out[0].message);
  }
  for (const e of errs.sort((a, b) => b.instancePath.length - a.instancePath.length)) {
    const p = describe(e, t);
    const k = p.path + p.message;
    if (seen.has(k)) continue;
    seen.add(k);
    out.push(p);
  }
  return out.slice(0, 12);
}

/** Everything wrong with a scenario text before running it: syntax first, then the schema. */
export function checkScenarioText(text: string, t: T = tEn, lang = 'en'): { value: unknown; problems: Problem[] } {
  const { value, problem } = parseJson(text, t);
  if (problem) return { value: undefined, problems: [problem] };
  return { value, problems: schemaProblems(value, t, lang) };
}
