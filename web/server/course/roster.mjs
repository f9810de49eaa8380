// A roster as a teacher brings it: pasted lines, or the CSV an LMS exports. Canvas's
// gradebook export (Student, ID, SIS User ID, SIS Login ID, Section, then assignments, with
// a "Points Possible" row), Moodle's participants or grade export (First name, Last
// name/Surname, ID number, Email address, Username), or any file with a header naming a
// student ID or an email and a name. Without a header line, each line is an ID (or email)
// and a name, comma- or tab-separated, in either order. Pure: no database.
import { parse } from 'csv-parse/sync';
import { NAME_MAX, textProblem } from '../limits.mjs';

/** The most students one class's roster holds. */
export const ROSTER_MAX = 2000;
/** The largest roster file taken (a Canvas export of 2,000 students with a few
 * assignment columns is about 200 KiB). */
export const ROSTER_BYTES = 512 * 1024;
export const FIELD_MAX = { sis_id: 64, email: 254, login: 100, canvas_id: 20, section: 100 };

export class RosterError extends Error {
  constructor(message) { super(message); this.statusCode = 400; }
}

// Header names (lower case, spaces squeezed) for each field, in en/ja/zh as LMSs and
// spreadsheets write them.
const HEADERS = {
  name: ['student', 'name', 'full name', 'fullname', 'student name', '氏名', '名前', '姓名', '学生', '学生姓名'],
  first: ['first name', 'firstname', 'given name', '名'],
  last: ['last name', 'lastname', 'surname', 'family name', '姓'],
  sis_id: ['sis user id', 'id number', 'idnumber', 'student id', 'student number', 'student no', 'sis id', '学籍番号', '学生番号', '学号'],
  email: ['email', 'email address', 'e-mail', 'e-mail address', 'メールアドレス', 'メール', '电子邮件', '邮箱', '电子邮箱'],
  login: ['sis login id', 'username', 'user name', 'login', 'login id'],
  section: ['section', 'sections', 'group', 'groups', 'クラス', '班级'],
  id: ['id'],
};
const norm = (h) => String(h ?? '').replace(/^\uFEFF/, '').trim().toLowerCase().replace(/\s+/g, ' ');
const EMAIL_RE = /^[^\s@]{1,64}@[^\s@]{1,189}\.[^\s@]{1,60}$/;

function headerMap(row) {
  const cells = row.map(norm);
  const at = {};
  for (const [field, names] of Object.entries(HEADERS)) {
    const i = cells.findIndex((c) => names.includes(c));
    if (i !== -1) at[field] = i;
  }
  // "ID" is Canvas's own user id in a Canvas export (beside SIS User ID / SIS Login ID),
  // elsewhere the student ID.
  if (at.id !== undefined) {
    if (at.sis_id !== undefined || at.login !== undefined) { at.canvas_id = at.id; } else at.sis_id = at.id;
    delete at.id;
  }
  const named = at.name !== undefined || at.first !== undefined || at.last !== undefined;
  return named && (at.sis_id !== undefined || at.email !== undefined || at.login !== undefined) ? at : null;
}

function field(value, key, line) {
  const v = String(value ?? '').normalize('NFC').trim();
  if (!v) return null;
  if (v.length > FIELD_MAX[key]) throw new RosterError(`line ${line}: the ${key.replace('_', ' ')} "${v.slice(0, 40)}..." is longer than ${FIELD_MAX[key]} characters`);
  const bad = textProblem(v, { name: true });
  if (bad) throw new RosterError(`line ${line}: the ${key.replace('_', ' ')} ${bad}`);
  return v;
}

function nameOf(raw, line) {
  const v = String(raw ?? '').normalize('NFC').trim().replace(/\s+/g, ' ');
  if (!v) throw new RosterError(`line ${line}: no name; every student needs one`);
  const bad = textProblem(v, { name: true });
  if (bad) throw new RosterError(`line ${line}: the name ${bad}`);
  if ([...v].length > NAME_MAX) throw new RosterError(`line ${line}: the name "${v.slice(0, 40)}..." is longer than ${NAME_MAX} characters`);
  return v;
}

/**
 * The students of a roster text: [{ name, sis_id, email, login, canvas_id, section }] (null
 * where a field is not given), or a RosterError naming the line. Each has a name and an
 * ID, email or login. Names are made unique: a name given twice gets its ID in
 * parentheses. Canvas's "Points Possible" row and its "Test Student" are left out.
 */
export function parseRoster(text) {
  if (typeof text !== 'string') throw new RosterError('send the roster as text');
  const body = text.replace(/^\uFEFF/, '');
  if (!body.trim()) throw new RosterError('the roster is empty; paste one line per student (ID, name) or send the CSV your LMS exports');
  const first = body.slice(0, body.search(/\r?\n|$/));
  const delimiter = first.includes('\t') && !first.includes(',') ? '\t' : first.includes(';') && !first.includes(',') ? ';' : ',';
  let rows;
  try {
    rows = parse(body, { delimiter, relax_column_count: true, skip_empty_lines: true, trim: true, bom: true, max_record_size: 16384, to: ROSTER_MAX + 2 });
  } catch (e) { throw new RosterError(`the roster is not CSV that can be read: ${e.message}`); }
  const at = headerMap(rows[0]);
  if (!at && rows[0].some((c) => HEADERS.name.includes(norm(c)) || HEADERS.first.includes(norm(c)))) {
    throw new RosterError('line 1: the header names the students but has no student ID, email or login column; the gradebook needs one of them to match the LMS (Student ID, ID number, SIS User ID, Email address, Username, ...)');
  }
  const out = [];
  const data = at ? rows.slice(1) : rows;
  const lineOf = (i) => i + (at ? 2 : 1);
  data.forEach((row, i) => {
    const line = lineOf(i);
    if (row.every((c) => !c)) return;
    if (/^points possible$/i.test(String(row[0] ?? '').trim())) return; // Canvas's second row
    let e;
    if (at) {
      const full = at.name !== undefined ? row[at.name]
        : [row[at.first], row[at.last]].filter((x) => x && String(x).trim()).join(' ');
      e = { name: full, sis_id: row[at.sis_id], email: row[at.email], login: row[at.login], canvas_id: row[at.canvas_id], section: row[at.section] };
      if (/^(test student|student, test)$/i.test(String(full ?? '').trim())) return; // Canvas's Test Student
    } else {
      if (row.length < 2) throw new RosterError(`line ${line}: write an ID (or email) and a name, separated by a comma or a tab`);
      // ID first or name first: the cell with an @ or a digit and no space is the identifier.
      const looksId = (c) => /@/.test(c) || (/\d/.test(c) && !/\s/.test(c));
      const [a, b] = [String(row[0]), String(row[1])];
      const [id, name] = looksId(a) || !looksId(b) ? [a, b] : [b, a];
      e = { name, ...(id.includes('@') ? { email: id } : { sis_id: id }) };
    }
    const entry = {
      name: nameOf(e.name, line), sis_id: field(e.sis_id, 'sis_id', line), email: field(e.email, 'email', line),
      login: field(e.login, 'login', line), canvas_id: field(e.canvas_id, 'canvas_id', line), section: field(e.section, 'section', line),
    };
    if (entry.email && !EMAIL_RE.test(entry.email)) throw new RosterError(`line ${line}: "${entry.email}" is not an email address`);
    if (entry.canvas_id && !/^\d+$/.test(entry.canvas_id)) throw new RosterError(`line ${line}: Canvas's ID column holds numbers; "${entry.canvas_id}" is not one`);
    if (!entry.sis_id && !entry.email && !entry.login) throw new RosterError(`line ${line}: ${entry.name} has no student ID, email or login; the gradebook needs one to match the LMS`);
    out.push(entry);
  });
  if (out.length > ROSTER_MAX) throw new RosterError(`the roster has more than ${ROSTER_MAX} students; a class holds at most ${ROSTER_MAX}`);
  if (!out.length) throw new RosterError('the roster names no student');
  const keys = new Map();
  for (const [i, e] of out.entries()) {
    for (const k of ['sis_id', 'email', 'login']) {
      if (!e[k]) continue;
      const key = `${k}\n${e[k].toLowerCase()}`;
      if (keys.has(key)) throw new RosterError(`${e.name} and ${out[keys.get(key)].name} have the same ${k.replace('_', ' ')} "${e[k]}"; each student needs their own`);
      keys.set(key, i);
    }
  }
  uniqueNames(out);
  return out;
}

/** Names given twice get their ID (or email, or login) in parentheses. */
function uniqueNames(entries) {
  const count = new Map();
  for (const e of entries) count.set(e.name, (count.get(e.name) ?? 0) + 1);
  for (const e of entries) {
    if (count.get(e.name) > 1) {
      const full = `${e.name} (${e.sis_id ?? e.email ?? e.login})`;
      e.name = [...full].length > NAME_MAX ? [...full].slice(0, NAME_MAX).join('') : full;
    }
  }
}

/** The identifier a student types to join: their ID, email or login, as stored for lookup. */
export const idKey = (s) => String(s ?? '').normalize('NFC').trim().toLowerCase();
