// What the class server and the page read out of one hw-lab result (schema version 1):
// the grouping keys (CPU model, hypervisor, EPT/NPT setting) and a few headline numbers.
// Plain JavaScript so that the Node server and the Vite app share it without a build step.

/** The numbers a class can compare, by key: label, unit. */
export const METRICS = {
  cpuid_published_min_cycles: { label: "cpuid exit, the published method: unfenced rdtsc;cpuid;rdtsc (min)", unit: 'cycles' },
  cpuid_exit_cycles: { label: 'cpuid exit, fenced timer (median)', unit: 'cycles' },
  memtouch_4k_first_ns: { label: 'memtouch 4 KiB first touch (median, per page)', unit: 'ns' },
  memtouch_4k_second_ns: { label: 'memtouch 4 KiB second touch (median, per page)', unit: 'ns' },
  memtouch_thp_first_ns: { label: 'memtouch THP first touch (median of 4 KiB writes: most pay no fault)', unit: 'ns' },
  memtouch_thp_region_ns: { label: 'memtouch THP first write into each huge page (median; 2 MiB on x86)', unit: 'ns' },
  ptrchase_4k_largest_ns: { label: 'pointer chase, 4 KiB pages, largest working set (median)', unit: 'ns' },
  ctxswitch_ns: { label: 'context switch round trip (median, same CPU)', unit: 'ns' },
  vmcall_ns: { label: 'vmcall round trip (median)', unit: 'ns' },
};

export const GROUPS = {
  cpu_model: 'CPU model',
  hypervisor: 'hypervisor',
  tdp: 'EPT/NPT setting',
};

function metric(result, bench, kase, name) {
  const b = (result.benchmarks ?? []).find((x) => x && x.name === bench);
  if (!b || !Array.isArray(b.cases)) return null;
  const c = typeof kase === 'function' ? kase(b.cases) : b.cases.find((x) => x && x.name === kase);
  if (!c || c.status !== 'ok' || !Array.isArray(c.metrics)) return null;
  const m = name ? c.metrics.find((x) => x && x.name === name) : c.metrics[0];
  return m && typeof m.median === 'number' ? m : null;
}

/** The fenced cpuid case: cpuid_leaf0_fenced, or cpuid_leaf0 of hw-lab before the published
 * method (no params.method: it was fenced then). */
function fencedCpuid(cases) {
  return cases.find((c) => c && c.name === 'cpuid_leaf0_fenced')
    ?? cases.find((c) => c && c.name === 'cpuid_leaf0' && !c.params?.method);
}

/** The published unfenced cpuid case (hw-lab that has it says params.method "published: ..."). */
function publishedCpuid(cases) {
  return cases.find((c) => c && c.name === 'cpuid_leaf0' && String(c.params?.method ?? '').startsWith('published'));
}

/** The cpuid figure measured the published way, in TSC cycles: { min, mean } or null. */
export function publishedCpuidCycles(result) {
  const m = metric(result, 'cpuid_exit', publishedCpuid, 'cycles');
  return m && m.unit === 'tsc_cycles' && typeof m.min === 'number' ? { min: m.min, mean: m.mean } : null;
}

/** The fenced cpuid figure in TSC cycles ({ min, median }), for hw-lab results of any age. */
export function fencedCpuidCycles(result) {
  const m = metric(result, 'cpuid_exit', fencedCpuid, 'cycles');
  return m && m.unit === 'tsc_cycles' ? { min: m.min, median: m.median } : null;
}

/** Exit + entry estimated the published way: a VM result's min minus the min of a bare-metal
 * result on the same CPU model (both measured with the published method). `items` are
 * { label, result }; returns [{ vm, host, cycles }] for each VM result that has a host. */
export function cpuidExitEstimates(items) {
  const withPub = items.map((it) => ({ ...it, pub: publishedCpuidCycles(it.result), cpu: it.result?.probe?.cpu?.model_name }))
    .filter((it) => it.pub && it.cpu);
  const hosts = withPub.filter((it) => it.result.probe?.virtualization?.in_vm === false);
  const out = [];
  for (const vm of withPub.filter((it) => it.result.probe?.virtualization?.in_vm === true)) {
    const host = hosts.filter((h) => h.cpu === vm.cpu).sort((a, b) => a.pub.min - b.pub.min)[0];
    if (host) out.push({ vm: vm.label, host: host.label, cycles: vm.pub.min - host.pub.min });
  }
  return out;
}

/** THP's first pass scaled to seconds per GiB: the fastest whole first pass of the run
 * (memtouch's params.first_pass_s over params.bytes), so the one fault per huge page and
 * the pages that pay none are both in it. */
export function thpFirstPassPerGiB(result) {
  const b = (result.benchmarks ?? []).find((x) => x && x.name === 'memtouch');
  const c = b?.cases?.find((x) => x && x.name === 'thp' && x.status === 'ok');
  const s = c?.params?.first_pass_s; const bytes = c?.params?.bytes;
  return typeof s === 'number' && typeof bytes === 'number' && bytes > 0 ? (s * 2 ** 30) / bytes : null;
}

/** Converts a metric to nanoseconds with the result's timer frequency. */
export function toNs(result, m) {
  if (!m) return null;
  if (m.unit === 'ns') return m.median;
  const hz = result.timer?.freq_hz;
  return typeof hz === 'number' && hz > 0 ? (m.median * 1e9) / hz : null;
}

function largest(prefix) {
  return (cases) => cases
    .filter((c) => c && typeof c.name === 'string' && c.name.startsWith(prefix) && c.status === 'ok')
    .sort((a, b) => (a.params?.working_set_bytes ?? 0) - (b.params?.working_set_bytes ?? 0))
    .at(-1);
}

export function tdpLabel(probe) {
  const v = probe?.kvm?.tdp;
  const vendor = String(probe?.cpu?.vendor ?? '');
  const name = /amd|hygon/i.test(vendor) ? 'NPT' : /intel/i.test(vendor) ? 'EPT' : 'EPT/NPT';
  // kvm_pvm (software virtualization) always uses shadow page tables: no EPT/NPT to set
  if ((v === null || v === undefined || v === '') && probe?.kvm?.backend === 'kvm_pvm') return 'shadow paging (kvm_pvm)';
  if (v === null || v === undefined || v === '') return 'not visible';
  if (/^(y|1|on|true)$/i.test(String(v))) return `${name} on`;
  if (/^(n|0|off|false)$/i.test(String(v))) return `${name} off`;
  return `${name} ${String(v).slice(0, 20)}`;
}

/** The summary kept beside each stored upload (also the CSV columns). */
export function summarize(result) {
  const p = result.probe ?? {};
  const fenced = fencedCpuidCycles(result);
  const pub = publishedCpuidCycles(result);
  const v = {
    cpu_model: String(p.cpu?.model_name ?? '').slice(0, 200) || 'unknown',
    arch: String(p.arch ?? '').slice(0, 40),
    hypervisor: p.virtualization?.in_vm ? String(p.virtualization?.hypervisor ?? 'unknown VM').slice(0, 80) : 'none (bare metal)',
    tdp: tdpLabel(p),
    mode: result.mode,
    created_utc: result.created_utc,
    metrics: {
      cpuid_published_min_cycles: pub ? pub.min : null,
      cpuid_exit_cycles: fenced ? fenced.median : null,
      memtouch_4k_first_ns: toNs(result, metric(result, 'memtouch', '4k', 'first_touch')),
      memtouch_4k_second_ns: toNs(result, metric(result, 'memtouch', '4k', 'second_touch')),
      memtouch_thp_first_ns: toNs(result, metric(result, 'memtouch', 'thp', 'first_touch')),
      memtouch_thp_region_ns: toNs(result, metric(result, 'memtouch', 'thp', 'region_first_touch')),
      ptrchase_4k_largest_ns: toNs(result, metric(result, 'ptrchase', largest('4k_'), null)),
      ctxswitch_ns: toNs(result, metric(result, 'ctxswitch', 'same_cpu', null)),
      vmcall_ns: toNs(result, metric(result, 'vmcall_bench', (cs) => cs.find((c) => c && c.status === 'ok'), null)),
    },
  };
  for (const k of Object.keys(v.metrics)) if (typeof v.metrics[k] !== 'number' || !Number.isFinite(v.metrics[k])) v.metrics[k] = null;
  return v;
}

/** The pointer-chase curve: [{ pages: '4k'|'8k'|...|'thp', mib, ns }] (the base page is
 * the machine's: 4 KiB on x86, 8 KiB on Sunway). */
export function ptrchaseCurve(result) {
  const b = (result.benchmarks ?? []).find((x) => x && x.name === 'ptrchase');
  const out = [];
  for (const c of b?.cases ?? []) {
    const m = /^(\d+k|thp)_(\d+)MiB$/.exec(c?.name ?? '');
    if (!m || c.status !== 'ok' || !c.metrics?.[0]) continue;
    const ns = toNs(result, c.metrics[0]);
    if (ns !== null) out.push({ pages: m[1], mib: Number(m[2]), ns });
  }
  return out.sort((a, b) => a.mib - b.mib);
}
