// @vitest-environment jsdom
/* cpuid the published way (hw-lab's unfenced cpuid_leaf0) beside the fenced figure, the
 * exit + entry estimate from a VM result and a bare-metal result on the same CPU model,
 * and THP's first pass: extract.mjs's numbers and the Published view in en, ja and zh. */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { act, cleanup, render } from '@testing-library/react';
import fixture from '../../../tests/server/fixtures/result-quick.json';
import i18n from '../i18n';
import { englishRuns, translatedText } from '../test/english';
import { TDP_IN_VM, cpuidExitEstimates, fencedCpuidCycles, kvmBackend, ptrchaseCurve, publishedCpuidCycles, summarize, tdpLabel, thpFirstPassPerGiB } from './extract.mjs';
import { showTdp, showTdpAndBackend } from './labels';
import { Published } from './Published';
import type { Stored } from './store';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type R = any;
const cycles = (min: number, median: number, mean: number) => ({ name: 'cycles', unit: 'tsc_cycles', per: 'sample', min, median, mean, max: mean * 3, count: 65536 });
/** The fixture as today's hw-lab writes cpuid_exit: the published method and the fenced one. */
function current(publishedMin: number, cpu: string, inVm: boolean): R {
  const r: R = structuredClone(fixture);
  r.probe.cpu.model_name = cpu;
  r.probe.virtualization.in_vm = inVm;
  const b = r.benchmarks.find((x: R) => x.name === 'cpuid_exit');
  b.cases = [
    { name: 'cpuid_leaf0', status: 'ok', params: { method: 'published: unfenced rdtsc; cpuid; rdtsc, no warm-up', samples: 65536 }, metrics: [cycles(publishedMin, publishedMin + 40, publishedMin + 90)] },
    { name: 'timer_overhead', status: 'ok', params: { method: 'fenced: ...' }, metrics: [cycles(52, 78, 75)] },
    { name: 'cpuid_leaf0_fenced', status: 'ok', params: { method: 'fenced: lfence; rdtsc; lfence around a call' }, metrics: [cycles(publishedMin + 60, publishedMin + 130, publishedMin + 200)] },
  ];
  return r;
}
const stored = (label: string, result: R, key: number): Stored => ({ key, label, added: '2026-01-01T00:00:00Z', result } as Stored);

describe('extract.mjs', () => {
  it('keeps the published and the fenced cpuid figures apart', () => {
    const now = current(2000, 'AMD EPYC', true);
    expect(publishedCpuidCycles(now)).toEqual({ min: 2000, mean: 2090 });
    expect(fencedCpuidCycles(now)).toEqual({ min: 2060, median: 2130 });
    expect(summarize(now).metrics.cpuid_published_min_cycles).toBe(2000);
    expect(summarize(now).metrics.cpuid_exit_cycles).toBe(2130);
    // an older result: cpuid_leaf0 without a method was fenced
    const old = fixture.benchmarks[0].cases.find((c) => c.name === 'cpuid_leaf0')!.metrics[0];
    expect(publishedCpuidCycles(fixture)).toBeNull();
    expect(fencedCpuidCycles(fixture)).toEqual({ min: old.min, median: old.median });
    expect(summarize(fixture).metrics.cpuid_published_min_cycles).toBeNull();
    expect(summarize(fixture).metrics.cpuid_exit_cycles).toBe(old.median);
  });

  it('subtracts the bare-metal min of the same CPU model only', () => {
    const vm = { label: 'vm', result: current(2284, 'AMD Ryzen 7 2700', true) };
    const host = { label: 'host', result: current(288, 'AMD Ryzen 7 2700', false) };
    const slowHost = { label: 'host2', result: current(300, 'AMD Ryzen 7 2700', false) };
    const other = { label: 'other', result: current(100, 'Intel Xeon', false) };
    expect(cpuidExitEstimates([vm, slowHost, host, other])).toEqual([{ vm: 'vm', host: 'host', cycles: 1996 }]);
    expect(cpuidExitEstimates([vm, other])).toEqual([]);
    expect(cpuidExitEstimates([vm, { label: 'old', result: { ...fixture, probe: { ...fixture.probe, virtualization: { ...fixture.probe.virtualization, in_vm: false } } } }])).toEqual([]);
  });

  it('names kvm_pvm shadow paging on a host instead of an invisible EPT/NPT setting', () => {
    expect(tdpLabel({ kvm: { tdp: null, backend: 'kvm_pvm' } })).toBe('shadow paging (kvm_pvm)');
    expect(tdpLabel({ kvm: { tdp: null, backend: 'none' } })).toBe('not visible');
    expect(tdpLabel({ kvm: { tdp: 'Y', backend: 'kvm_intel' }, cpu: { vendor: 'GenuineIntel' } })).toBe('EPT on');
  });

  it('files a run inside a VM under "host\'s setting not visible", never under the KVM backend the VM has', () => {
    // Firecracker on AMD EPYC, no VT-x: the VM's /dev/kvm is kvm_pvm, for guests of its own
    const vm = { virtualization: { in_vm: true }, kvm: { tdp: null, backend: 'kvm_pvm' }, cpu: { vendor: 'AuthenticAMD' } };
    expect(tdpLabel(vm)).toBe(TDP_IN_VM);
    // a nested kvm_intel shows its own ept parameter: not the host's either
    expect(tdpLabel({ virtualization: { in_vm: true }, kvm: { tdp: 'Y', backend: 'kvm_intel' }, cpu: { vendor: 'GenuineIntel' } })).toBe(TDP_IN_VM);
    expect(TDP_IN_VM.length).toBeLessThanOrEqual(40); // the results table's tdp column
    expect(kvmBackend(vm)).toBe('kvm_pvm');
    expect(kvmBackend({ kvm: { backend: 'none' } })).toBeNull();
    const r: R = structuredClone(fixture);
    r.probe.kvm.backend = 'kvm_pvm';
    expect(summarize(r)).toMatchObject({ hypervisor: 'kvm', tdp: TDP_IN_VM, kvm_backend: 'kvm_pvm' });
    // memtouch and the pointer chase of such a run are not filed under shadow paging
    expect(JSON.stringify(summarize(r))).not.toContain('shadow paging');
  });

  it('THP first pass per GiB and base pages of any size', () => {
    const thp = (fixture as R).benchmarks[1].cases[1].params;
    expect(thpFirstPassPerGiB(fixture)).toBeCloseTo((thp.first_pass_s * 2 ** 30) / thp.bytes, 12);
    const sw: R = structuredClone(fixture);
    sw.benchmarks[2].cases[0].name = '8k_4MiB';
    expect(ptrchaseCurve(sw).filter((p) => p.pages === '8k').map((p) => p.mib)).toEqual([4]);
  });
});

for (const lang of ['en', 'ja', 'zh'] as const) {
  describe(`Published cpuid in ${lang}`, () => {
    beforeEach(async () => { await act(async () => { await i18n.changeLanguage(lang); }); });
    afterEach(() => cleanup());

    it('shows the estimate when a VM and a bare-metal result on one CPU model are selected', () => {
      const mine = [stored('vm', current(2284, 'AMD Ryzen 7 2700', true), 1), stored('host', current(288, 'AMD Ryzen 7 2700', false), 2)];
      const { container } = render(<Published mine={mine} />);
      const cpuid = container.querySelector('svg[data-chart=cpuid]')!;
      // min and mean, the published way, for each of the two
      expect(cpuid.querySelectorAll('path.mine')).toHaveLength(4);
      const est = container.querySelector('svg[data-chart=cpuid-estimate]')!;
      expect(est.querySelectorAll('path.mine')).toHaveLength(1);
      expect(est.querySelector('path.mine title')!.textContent).toContain('vm − host');
      expect(est.querySelector('path.mine title')!.textContent).toContain('1,996');
      expect(est.querySelectorAll('circle')).toHaveLength(3);    // the published estimates
      expect(container.querySelector('[data-testid=cpuid-estimate]')!.textContent).toBe(i18n.t('published.cpuid.estNote', { ns: 'results' }));
      if (lang !== 'en') expect(englishRuns(translatedText(container), [/^(?:rdtsc|cpuid)$/])).toEqual([]);
    });

    it('words the kvm_pvm backend and a run inside a VM in the language shown', () => {
      const t = i18n.getFixedT(lang, 'results');
      const s = showTdp(t, 'shadow paging (kvm_pvm)');
      expect(s).toBe(i18n.t('summary.tdpPvm', { ns: 'results' }));
      expect(s).toContain('kvm_pvm');
      const vm = showTdpAndBackend(t, TDP_IN_VM, 'kvm_pvm');
      expect(vm).toBe(`${i18n.t('summary.tdpInVm', { ns: 'results' })} · ${i18n.t('summary.ownKvm', { ns: 'results', backend: 'kvm_pvm' })}`);
      if (lang === 'en') expect(vm).toBe("measured inside a VM: the host's EPT/NPT setting is not visible · the VM's own KVM: kvm_pvm");
      if (lang !== 'en') expect(englishRuns(s + vm)).toEqual([]);
    });

    it('says how to get the estimate, and keeps an older fenced figure apart', () => {
      const { container } = render(<Published mine={[stored('old', fixture, 1)]} />);
      expect(container.querySelector('[data-testid=cpuid-estimate]')!.textContent).toBe(i18n.t('published.cpuid.estHint', { ns: 'results' }));
      const mine = container.querySelectorAll('svg[data-chart=cpuid] path.mine title');
      expect(mine).toHaveLength(1);
      expect(mine[0].textContent).toContain(i18n.t('published.cpuid.yoursFencedMin', { ns: 'results' }));
      expect(container.querySelector('svg[data-chart=cpuid-estimate] path.mine')).toBeNull();
    });
  });
}
