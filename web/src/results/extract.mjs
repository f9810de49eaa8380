// What the class server and the page read out of one hw-lab result (schema version 1):
// the grouping keys (CPU model, hypervisor, EPT/NPT setting) and a few headline numbers.
// Plain JavaScript so that the Node server and the Vite app share it without a build step.

/** The numbers a class can compare, by key: label, unit, and whether the number depends
 * on the run's memory size (quick runs touch 64 MiB, full runs 1 GiB): such numbers are
 * only compared between runs of the same size. */
export const METRICS = {
  cpuid_published_min_cycles: { label: "cpuid exit, the published method: unfenced rdtsc;cpuid;rdtsc (min)", unit: 'cycles', bySize: false },
  cpuid_exit_cycles: { label: 'cpuid exit, fenced timer (median)', unit: 'cycles', bySize: false },
  memtouch_4k_first_ns: { label: 'memtouch 4 KiB first touch (median, per page)', unit: 'ns', bySize: true },
  memtouch_4k_second_ns: { label: 'memtouch 4 KiB second touch (median, per page)', unit: 'ns', bySize: true },
  memtouch_thp_first_ns: { label: 'memtouch THP first touch (median of 4 KiB writes: most pay no fault)', unit: 'ns', bySize: true },
  memtouch_thp_region_ns: { label: 'memtouch THP first write into each huge page (median; 2 MiB on x86)', unit: 'ns', bySize: true },
  ptrchase_4k_largest_ns: { label: 'pointer chase, 4 KiB pages, largest working set (median)', unit: 'ns', bySize: true },
  ctxswitch_ns: { label: 'context switch round trip (median, same CPU)', unit: 'ns', bySize: false },
  vmcall_ns: { label: 'vmcall round trip (median)', unit: 'ns', bySize: false },
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

/* Timer frequencies a real machine has (a 1 kHz counter to a 100 GHz TSC); outside them a
 * conversion would give nonsense (every time 0 ns), so the number is not shown. */
const HZ_MIN = 1e3; const HZ_MAX = 1e11;

/** Converts a metric to nanoseconds with the result's timer frequency. */
export function toNs(result, m) {
  if (!m) return null;
  if (m.unit === 'ns') return m.median;
  const hz = result.timer?.freq_hz;
  return typeof hz === 'number' && hz >= HZ_MIN && hz <= HZ_MAX ? (m.median * 1e9) / hz : null;
}

/** The run's memory size in MiB: the largest memtouch buffer or pointer-chase working set
 * (64 in a quick run, 1024 in a full one unless --mem-mib said otherwise), or null. */
export function memMiB(result) {
  let bytes = 0;
  for (const b of result.benchmarks ?? []) {
    if (!b || (b.name !== 'memtouch' && b.name !== 'ptrchase')) continue;
    for (const c of b.cases ?? []) {
      const v = c?.params?.bytes ?? c?.params?.working_set_bytes;
      if (typeof v === 'number' && Number.isFinite(v) && v > bytes) bytes = v;
    }
  }
  return bytes > 0 ? Math.round(bytes / 1048576) : null;
}

function largest(prefix) {
  return (cases) => cases
    .filter((c) => c && typeof c.name === 'string' && c.name.startsWith(prefix) && c.status === 'ok')
    .sort((a, b) => (a.params?.working_set_bytes ?? 0) - (b.params?.working_set_bytes ?? 0))
    .at(-1);
}

/** The summary's hypervisor of a run on bare metal. */
export const BARE_METAL = 'none (bare metal)';
/** The summary's EPT/NPT setting of a run measured inside a VM (at most 40 characters: the
 * results table's tdp column). Its memory was translated by the host's EPT/NPT or shadow
 * tables, which a guest cannot see; the KVM backend the probe found in the VM (kvm_pvm, or a
 * nested kvm_intel with its own ept) is what the VM would use for guests of its own, so it
 * is kept apart, as kvm_backend, never as the grouping. */
export const TDP_IN_VM = "in a VM: host's EPT/NPT not visible";

/** The KVM backend the probe found (kvm_intel, kvm_amd, kvm_pvm, unknown), or null. */
export function kvmBackend(probe) {
  const b = probe?.kvm?.backend;
  return typeof b === 'string' && /^(kvm_intel|kvm_amd|kvm_pvm|unknown)$/.test(b) ? b : null;
}

/** What the measured memory's second translation was: the host's EPT/NPT setting as a
 * host sees it, or TDP_IN_VM. */
export function tdpLabel(probe) {
  if (probe?.virtualization?.in_vm) return TDP_IN_VM;
  const v = probe?.kvm?.tdp;
  const vendor = String(probe?.cpu?.vendor ?? '');
  const name = /amd|hygon/i.test(vendor) ? 'NPT' : /intel/i.test(vendor) ? 'EPT' : 'EPT/NPT';
  // kvm_pvm on a host (software virtualization) always uses shadow page tables for its
  // guests: no EPT/NPT to set
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
    hypervisor: p.virtualization?.in_vm ? String(p.virtualization?.hypervisor ?? 'unknown VM').slice(0, 80) : BARE_METAL,
    tdp: tdpLabel(p),
    kvm_backend: kvmBackend(p),
    mode: result.mode,
    mem_mib: memMiB(result),
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
