// @vitest-environment jsdom
/* A course as a student's page sees it (a fetch stand-in for the class server): records a
 * closed class refuses stay in the browser marked not sent and go out only when the
 * student asks; a deleted class is said as the teacher's doing, the student's answers and
 * variants kept; joining from a roster by picking a name; a device code made on one
 * browser and used from a link on another; the student's own scores. */
import 'fake-indexeddb/auto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { cleanup, fireEvent, render, waitFor } from '@testing-library/react';
import '../i18n';
import { newRecordId, outgoing, saveDone, waiting, unqueue } from '../progress/db';
import { StudentJoin } from '../progress/StudentJoin';
import { currentClass, saveStudent, setCurrentClass, studentOf } from '../progress/student';
import { kick, resetSyncForTests } from '../progress/sync';
import { ClassLine } from './ClassLine';
import { standingOf } from './standing';

const CODE = 'ABCD-EFGH';
const PAST = '2026-11-20T09:00:00.000Z';
afterEach(async () => {
  cleanup();
  await unqueue((await waiting()).map((o) => o.id));
  localStorage.clear();
  vi.unstubAllGlobals();
  resetSyncForTests();
  history.replaceState(null, '', '/');
});

type Handler = (method: string, path: string, body: unknown) => [number, unknown];
function server(handle: Handler) {
  const calls: [string, string, unknown][] = [];
  vi.stubGlobal('fetch', vi.fn(async (url: string, init: RequestInit = {}) => {
    const method = init.method ?? 'GET';
    const body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    const path = url.replace(`/api/classes/${CODE}`, '');
    calls.push([method, path, body]);
    const [status, out] = handle(method, path, body);
    return new Response(JSON.stringify(out), { status, headers: { 'Content-Type': 'application/json' } });
  }));
  return calls;
}
const joinAs = (name: string) => { saveStudent(CODE, { id: 'sid-ann', name, receipt: 'receipt-of-ann-123' }); setCurrentClass(CODE); };
const queueDone = async (lesson = 'ept-and-npt') => {
  const at = new Date().toISOString();
  await saveDone({ lesson, done: true, at }, outgoing(CODE, { id: newRecordId(), type: 'done', lesson, done: true, at }));
};
const text = (id: string) => document.querySelector(`[data-testid="${id}"]`)?.textContent ?? '';

describe('a closed class, a deleted class', () => {
  it('keeps what a closed class refused, marked not sent, and sends it only when asked', async () => {
    let open = false;
    const calls = server((method, path) => {
      if (path === '/progress') return open ? [200, { stored: 1, records: [] }] : [409, { statusCode: 409, need: 'open_class', closed_at: PAST, lesson: null, message: `class ${CODE} closed` }];
      if (path === '') return [200, { code: CODE, name: 'c', closed_at: open ? null : PAST }];
      return [404, { statusCode: 404, message: 'no route' }];
    });
    joinAs('Ann');
    await queueDone();
    await kick();
    expect(standingOf(CODE)).toMatchObject({ kind: 'closed', closed_at: PAST, lesson: null });
    expect(await waiting(CODE)).toHaveLength(1);
    // never sent again unasked: more kicks, a new record, time passing
    await queueDone('vmfunc');
    await kick(); await kick();
    await new Promise((r) => setTimeout(r, 50));
    expect(calls.filter(([, p]) => p === '/progress')).toHaveLength(1);
    // both tabs say so at once: the Results tab's class panel and the line above the exercises
    render(<StudentJoin code={CODE} />);
    render(<ClassLine klass={{ ...currentClass()! }} />);
    await waitFor(() => expect(text('class-closed-now')).toContain('2 records not sent: the class is closed.'));
    expect(text('class-closed-now')).toContain(`Class ${CODE} is closed since`);
    expect(text('class-closed-now')).toContain('(2026-11-20 09:00 UTC)');
    expect(text('in-class')).toContain('marked not sent');
    // the teacher reopened; the student asks
    open = true;
    fireEvent.click(document.querySelector('[data-testid="send-held"]')!);
    await waitFor(async () => expect(await waiting(CODE)).toEqual([]));
    expect(standingOf(CODE)).toBe(null);
    expect(calls.filter(([, p]) => p === '/progress')).toHaveLength(2);
  });

  it('says a deleted class was deleted by the teacher, keeps the answers and who the student was (the same variants)', async () => {
    server(() => [404, { statusCode: 404, message: `there is no class with the code "${CODE}"; check the code your teacher gave you` }]);
    joinAs('Ann');
    await queueDone();
    await kick();
    expect(standingOf(CODE)).toMatchObject({ kind: 'deleted' });
    expect(await waiting(CODE)).toHaveLength(1);
    expect(studentOf(CODE)).toMatchObject({ name: 'Ann' }); // seeds go on being Ann's: no question swapped
    render(<ClassLine klass={{ ...currentClass()! }} />);
    expect(text('in-class')).toContain(`Your teacher deleted class ${CODE}`);
    expect(text('in-class')).toContain('Your answers stay in this browser');
    expect(text('in-class')).not.toContain('check the code');
  });

  it('finds a deletion by itself when the page opens (no answer needed)', async () => {
    server(() => [404, { statusCode: 404, message: 'gone' }]);
    joinAs('Ann');
    render(<ClassLine klass={{ ...currentClass()! }} />);
    await waitFor(() => expect(text('in-class')).toContain(`Your teacher deleted class ${CODE}`));
  });
});

describe('a roster, two devices, scores', () => {
  it('joins by picking a name from the roster (those who joined are not offered), then shows the student\'s scores and a device code', async () => {
    const calls = server((method, path, body) => {
      if (path === '/roster/names') return [200, { students: [{ entry: 'e1', name: 'Tanaka, Aiko', joined: false }, { entry: 'e2', name: 'Li, Wei', joined: true }] }];
      if (path === '/roster/join') return [201, { student_id: 'sid-aiko', receipt: 'receipt-of-aiko-123', name: 'Tanaka, Aiko', class: CODE, ...(body as object) }];
      if (path === '/course') return [200, { class: CODE, closed_at: null, now: new Date().toISOString(), lessons: [], settings: { closes_at: '2099-01-01T10:00:00.000Z', late: 'refuse', lesson_closes: {} } }];
      if (path === '/students/me/scores') {
        return [200, { lessons: [{ id: 'ept-and-npt', title: { en: 'EPT and NPT' }, points: [2, 1, 1, 1, 1], possible: 6 }],
          scores: { lessons: { 'ept-and-npt': { score: 4.75, possible: 6, late: false, exercises: [] } }, total: 4.75, possible: 6, late: [] } }];
      }
      if (path === '/students/me/link') return [200, { code: 'K7PQ-M2XD', url: `http://10.0.0.5:8080/?view=results&class=${CODE}#link=K7PQ-M2XD`, expires_at: '2099-01-01T10:15:00.000Z' }];
      return [404, { statusCode: 404, message: 'no route' }];
    });
    render(<StudentJoin code={CODE} />);
    await waitFor(() => expect(document.querySelectorAll('[data-testid="roster-pick"] option')).toHaveLength(2));
    expect(text('roster-pick')).toContain('Tanaka, Aiko');
    expect(text('roster-pick')).not.toContain('Li, Wei');
    expect(document.querySelector('[data-testid="student-join-name"]')).toBe(null); // no free name with a roster
    fireEvent.change(document.querySelector('[data-testid="roster-pick"]')!, { target: { value: 'e1' } });
    fireEvent.submit(document.querySelector('[data-testid="roster-pick"]')!.closest('form')!);
    await waitFor(() => expect(studentOf(CODE)).toEqual({ id: 'sid-aiko', name: 'Tanaka, Aiko', receipt: 'receipt-of-aiko-123' }));
    expect(calls.find(([, p]) => p === '/roster/join')![2]).toEqual({ entry: 'e1' });
    await waitFor(() => expect(text('my-total')).toBe('4.75 of 6'));
    expect(text('closes-at')).toContain('This class closes on');
    const details = document.querySelector<HTMLDetailsElement>('.device-link')!;
    details.open = true;
    fireEvent(details, new Event('toggle'));
    await waitFor(() => expect(text('device-link-code')).toBe('K7PQ-M2XD'));
    expect(document.querySelector('[data-testid="device-link"] svg path')!.getAttribute('d')!.length).toBeGreaterThan(100);
  });

  it('a second browser opened at the link becomes the same student, and the code leaves the address bar', async () => {
    const calls = server((method, path) => {
      if (path === '/students/link') return [200, { student_id: 'sid-aiko', receipt: 'receipt-of-phone-123', name: 'Tanaka, Aiko', class: CODE }];
      return [404, { statusCode: 404, message: 'no route' }];
    });
    history.replaceState(null, '', `/?view=results&class=${CODE}#link=K7PQ-M2XD`);
    render(<StudentJoin code={CODE} />);
    await waitFor(() => expect(studentOf(CODE)).toMatchObject({ id: 'sid-aiko', receipt: 'receipt-of-phone-123' }));
    expect(calls.find(([, p]) => p === '/students/link')![2]).toEqual({ code: 'K7PQ-M2XD' });
    expect(location.hash).toBe('');
    expect(currentClass()).toMatchObject({ code: CODE, name: 'Tanaka, Aiko' });
  });
});
