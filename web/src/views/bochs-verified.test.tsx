// @vitest-environment jsdom
/* The "verified on Bochs" badge and reference list, on the real engine traces of the
 * examples and the data the last `make fidelity` run wrote. The data is checked against
 * the engine itself: for an example run with caches off and no address beyond 40 bits,
 * Bochs' recorded reads must be the engine's reads, entry for entry. */
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cleanup, render, screen, within } from '@testing-library/react';
import type { Result } from '../../../wasm-core/js/types';
import { exampleRuns } from '../test/engine';
import { BochsBadge, BochsReads, bochsRecord, svmRecord } from './BochsVerified';
import data from '../fidelity/bochs-verified.json';
import i18n from '../i18n';

let runs: Record<string, Result> = {};
beforeAll(async () => { ({ runs } = await exampleRuns()); await i18n.changeLanguage('en'); });
afterEach(() => cleanup());

const verified = Object.keys(data.examples);

describe('verified on Bochs', () => {
  it('the data names examples that exist, with a count and a date', () => {
    expect(verified.length).toBeGreaterThan(0);
    for (const n of verified) expect(runs[n], n).toBeTruthy();
    expect(data.date).toMatch(/^\d{4}-\d\d-\d\d$/);
    expect(data.accesses_compared).toBeGreaterThanOrEqual(300);
    expect(data.disagreements).toBe(0);
  });

  it('Bochs read what the engine reads, access by access (examples without caches)', () => {
    let compared = 0;
    for (const n of verified) {
      const r = runs[n];
      const rec = bochsRecord(n)!;
      expect(rec.bochs_reads.length, n).toBe(r.accesses.length);
      r.accesses.forEach((a, i) => {
        if (a.steps.some((s) => s.cache !== null)) return;        // Bochs ran it with caches off
        if (a.op === 'mov_cr3' && r.guest_paging === 'pae') return; // PDPTE loads: model.md 7
        const engine = a.steps.filter((s) => s.kind === 'read' || s.kind === 'eptp_list').map((s) => s.entry_hpa);
        expect(rec.bochs_reads[i], `${n} access ${i}`).toEqual(engine);
        compared++;
      });
    }
    expect(compared).toBeGreaterThan(10);
  });

  it('shows the badge for a verified example only', () => {
    const { container, rerender } = render(<BochsBadge example="ept-4k" />);
    const badge = screen.getByTestId('bochs-badge');
    expect(badge.textContent).toContain(String(data.examples['ept-4k'].accesses));
    expect(badge.textContent).toContain(data.date);
    rerender(<BochsBadge example="npt-4k" />);              // no SVM in Bochs: never verified
    expect(container.querySelector('[data-testid="bochs-badge"]')).toBeNull();
    rerender(<BochsBadge example={null} />);
    expect(container.querySelector('[data-testid="bochs-badge"]')).toBeNull();
  });

  it('lists both columns for the ept-4k walk and says they agree', () => {
    const a = runs['ept-4k'].accesses[0];
    render(<BochsReads example="ept-4k" accessIndex={0} access={a} />);
    const panel = screen.getByTestId('bochs-reads');
    const rows = within(panel).getAllByRole('row').slice(1);
    expect(rows).toHaveLength(24);                        // 4 + 5 x 4 references
    expect(panel.querySelectorAll('tr.bochs-differs')).toHaveLength(0);
    expect(panel.textContent).toContain('same host-physical addresses');
    for (const [i, s] of a.steps.filter((x) => x.kind === 'read').entries())
      expect(rows[i].textContent).toContain(s.entry_hpa);
  });

  it('says a walk with caches on is not comparable row by row', () => {
    const r = runs['caches-ept'];
    const i = r.accesses.findIndex((a) => a.steps.some((s) => s.cache === 'hit'));
    expect(i).toBeGreaterThanOrEqual(0);
    render(<BochsReads example="caches-ept" accessIndex={i} access={r.accesses[i]} />);
    expect(screen.getByTestId('bochs-reads').textContent).toContain('caches off');
  });
});

// The NPT part, written by `make fidelity-npt` (tests/svm: QEMU's SVM with nested paging).
const npt = (data as { npt?: { date: string; accesses_compared: number; disagreements: number; examples: Record<string, { accesses: number }> } }).npt;

describe('verified on QEMU SVM', () => {
  it('the data names mode-npt examples with their access counts, from a run with no disagreement', () => {
    expect(npt).toBeTruthy();
    const names = Object.keys(npt!.examples);
    expect(names.length).toBeGreaterThan(0);
    for (const n of names) {
      expect(runs[n], n).toBeTruthy();
      expect(runs[n].mode, n).toBe('npt');
      expect(npt!.examples[n].accesses, n).toBe(runs[n].accesses.length);
    }
    expect(npt!.accesses_compared).toBeGreaterThanOrEqual(20000);
    expect(npt!.disagreements).toBe(0);
    expect(npt!.date).toMatch(/^\d{4}-\d\d-\d\d$/);
  });

  it('shows the SVM badge for a verified npt example, the Bochs one elsewhere', () => {
    const { container, rerender } = render(<BochsBadge example="npt-4k" />);
    const badge = screen.getByTestId('svm-badge');
    expect(badge.textContent).toContain("QEMU's SVM");
    expect(badge.textContent).toContain(String(svmRecord('npt-4k')!.accesses));
    expect(container.querySelector('[data-testid="bochs-badge"]')).toBeNull();
    rerender(<BochsBadge example="ept-4k" />);
    expect(container.querySelector('[data-testid="svm-badge"]')).toBeNull();
    expect(screen.getByTestId('bochs-badge')).toBeTruthy();
  });
});
