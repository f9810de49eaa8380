// The gradebook as CSV, in three layouts (GET /api/classes/{code}/grades?format=...):
//
//   plain   ID, Email, Name, Section, one column per lesson ("Title (lesson-id)"), Total,
//           Possible, Late: every student who joined and every roster student.
//   canvas  Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, one
//           column per lesson titled "Title (lesson-id)", and the "Points Possible" row
//           after the header. Canvas matches a row by ID, SIS User ID or SIS Login ID, so
//           only roster students are listed (a roster loaded from Canvas's own export has
//           them); Canvas works out its own totals, so there is no total column.
//   moodle  Moodle's CSV grade import: an identifier column (ID number, and Email address,
//           either of which the import maps to the user field of the same name), the
//           name, then one column per lesson, each mapped on import to a grade item. Only
//           roster students with an ID number or email (Moodle can match no other row).
//
// Scores are written as the page shows them (two decimals at most); a roster student who
// never joined has empty cells (nothing graded), a student who joined and answered nothing
// 0. Every file: UTF-8 with a byte order mark (unless bom is false), CRLF line ends,
// csv.mjs's cells (a text a spreadsheet could take for a formula starts with ').
import { csvCell } from '../csv.mjs';

export const FORMATS = ['plain', 'canvas', 'moodle'];
const line = (cells) => `${cells.map(csvCell).join(',')}\r\n`;
const title = (l, lang) => `${l.title[lang] ?? l.title.en} (${l.id})`;

/**
 * @param {{ lessons: {id, title, possible}[], rows: {name, sis_id, email, login, canvas_id, section, scores: null | {lessons, total, possible, late}}[], format: string, lang?: string, bom?: boolean }} g
 * @returns {string}
 */
export function gradebookCsv({ lessons, rows, format, lang = 'en', bom = true }) {
  const cell = (r, l) => (r.scores ? r.scores.lessons[l.id]?.score ?? 0 : '');
  let out = bom ? '\uFEFF' : '';
  if (format === 'canvas') {
    out += line(['Student', 'ID', 'SIS User ID', 'SIS Login ID', 'Section', ...lessons.map((l) => title(l, lang))]);
    out += line(['Points Possible', '', '', '', '', ...lessons.map((l) => l.possible)]);
    for (const r of rows.filter((x) => x.sis_id || x.login || x.canvas_id)) {
      out += line([r.name, r.canvas_id ?? '', r.sis_id ?? '', r.login ?? '', r.section ?? '', ...lessons.map((l) => cell(r, l))]);
    }
  } else if (format === 'moodle') {
    out += line(['ID number', 'Email address', 'Full name', ...lessons.map((l) => l.title[lang] ?? l.title.en)]);
    for (const r of rows.filter((x) => x.sis_id || x.email)) {
      out += line([r.sis_id ?? '', r.email ?? '', r.name, ...lessons.map((l) => cell(r, l))]);
    }
  } else {
    out += line(['ID', 'Email', 'Name', 'Section', ...lessons.map((l) => title(l, lang)), 'Total', 'Possible', 'Late']);
    const possible = lessons.reduce((a, l) => a + l.possible, 0);
    for (const r of rows) {
      out += line([r.sis_id ?? r.login ?? '', r.email ?? '', r.name, r.section ?? '', ...lessons.map((l) => cell(r, l)),
        r.scores ? r.scores.total : '', Math.round(possible * 100) / 100, r.scores?.late.join(' ') ?? '']);
    }
  }
  return out;
}
