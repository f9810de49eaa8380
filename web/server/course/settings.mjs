// A class's grading settings as the teacher sends them (PUT /api/classes/{code}/course):
// a JSON Schema with a bound on every list, map and text, checked by ajv stopping at the
// first problem, then against the lessons (a lesson id must be one; points no longer than
// the lesson's exercises).
import Ajv2020 from 'ajv/dist/2020.js';
import { DEFAULT_SETTINGS } from './scoring.mjs';

const TIME = { type: ['string', 'null'], maxLength: 32, pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,3})?)?Z$' };
const LESSON_ID = '^[a-z0-9][a-z0-9-]{0,63}$';
const fraction = { type: 'number', minimum: 0, maximum: 1 };
export const SETTINGS_SCHEMA = {
  type: 'object', additionalProperties: false,
  properties: {
    counts: { enum: ['first', 'best', 'last'], description: 'which checked answer of an exercise counts' },
    hint_cost: { ...fraction, description: 'the fraction of an exercise\'s points lost when the hint was showing' },
    shown_cost: { ...fraction, description: 'the fraction lost when the answer had been shown for that variant' },
    late: { enum: ['refuse', 'accept'], description: 'after a closing time: refuse new records (409), or take them marked late' },
    late_cost: { ...fraction, description: 'the fraction a late answer loses (late: accept)' },
    closes_at: { ...TIME, description: 'the class\'s closing time (UTC), null for none' },
    lesson_closes: { type: 'object', maxProperties: 64, propertyNames: { pattern: LESSON_ID }, additionalProperties: TIME, description: 'a lesson\'s own closing time' },
    points: {
      type: 'object', maxProperties: 64, propertyNames: { pattern: LESSON_ID },
      additionalProperties: { type: 'array', maxItems: 64, items: { type: 'number', minimum: 0, maximum: 1000 } },
      description: 'points of each exercise of a lesson, by position (1 where not given)',
    },
    lessons: { type: ['array', 'null'], maxItems: 64, uniqueItems: true, items: { type: 'string', pattern: LESSON_ID }, description: 'the lessons the gradebook lists; null: all with exercises' },
  },
};

const ajv = new Ajv2020({ allErrors: false, strict: false });
const validate = ajv.compile(SETTINGS_SCHEMA);

export class SettingsError extends Error {
  constructor(message) { super(message); this.statusCode = 400; }
}

const norm = (t) => (t ? new Date(t).toISOString() : null);

/**
 * The settings to store from what the teacher sent (missing fields: the defaults), or a
 * SettingsError naming the first problem's JSON Pointer.
 * @param catalog course/catalog.mjs's lessons
 */
export function checkSettings(json, catalog) {
  if (!validate(json)) {
    const e = validate.errors[0];
    const where = e.keyword === 'additionalProperties' ? `${e.instancePath}/${e.params.additionalProperty}` : e.instancePath || '(the settings)';
    throw new SettingsError(`${where}: ${e.keyword === 'additionalProperties' ? 'is not a setting' : e.message}`);
  }
  const byId = new Map(catalog.map((l) => [l.id, l]));
  const lesson = (id, where) => {
    const l = byId.get(id);
    if (!l) throw new SettingsError(`${where}: there is no lesson "${id}"; lessons are ${[...byId.keys()].join(', ')}`);
    return l;
  };
  const s = { ...DEFAULT_SETTINGS, ...json };
  for (const [id, t] of Object.entries(s.lesson_closes)) { lesson(id, `/lesson_closes/${id}`); if (t !== null && Number.isNaN(Date.parse(t))) throw new SettingsError(`/lesson_closes/${id}: not a time`); }
  for (const [id, pts] of Object.entries(s.points)) {
    const l = lesson(id, `/points/${id}`);
    if (pts.length > l.kinds.length) throw new SettingsError(`/points/${id}: the lesson has ${l.kinds.length} exercises; ${pts.length} points given`);
  }
  for (const [i, id] of (s.lessons ?? []).entries()) lesson(id, `/lessons/${i}`);
  if (s.closes_at !== null && Number.isNaN(Date.parse(s.closes_at))) throw new SettingsError('/closes_at: not a time');
  return {
    ...s,
    closes_at: norm(s.closes_at),
    lesson_closes: Object.fromEntries(Object.entries(s.lesson_closes).filter(([, t]) => t !== null).map(([id, t]) => [id, norm(t)])),
  };
}
