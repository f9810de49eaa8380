/* Finds English prose left in a page rendered in Japanese or Chinese: a run of three or
 * more Latin-alphabet words (hex numbers, units and the technical names the translations
 * keep, such as EPT, VMCALL or PML4, do not count as words). Used by the views' and tabs'
 * tests to prove that every string on screen went through i18next. */
const KEEP = /^(?:0x[0-9a-f]+|[0-9][\w.,:×%-]*|[A-Z0-9/_+-]{2,}[a-z]?s?|[A-Z][a-z]?\d+|v86|gva|gpa|hpa|hva|gfn|pfn|pte|pcid|ncr3|eptp|cr[0-8]|KiB|MiB|GiB|ns|us|µs|ms|s|x86|x86-64|i386|amd64|aarch64|sw64|Sunway|Intel|AMD|Linux|Debian|HMcode|swFNPT|ELISA|xterm\.js|vmsim|hw-lab|JSON|CSV|id|json|csv|vmemlab|rdtsc|rdtscp|cpuid|vmcall|vmfunc|invlpg|markpage|memtouch|ptrchase|cpuidloop)$/;

export function englishRuns(text: string, extraKeep: RegExp[] = []): string[] {
  const runs: string[] = [];
  // Latin text between two non-Latin characters (Japanese or Chinese breaks a run), then
  // its words in order; a number or a kept name also breaks the run.
  for (const segment of text.match(/[A-Za-z0-9_.'/#+-]+(?:[ \t\n,;:()"\[\]]+[A-Za-z0-9_.'/#+-]+)*/g) ?? []) {
    let cur: string[] = [];
    const flush = () => { if (cur.length >= 3) runs.push(cur.join(' ')); cur = []; };
    for (const tok of segment.split(/[ \t\n,;:()"\[\]]+/).filter(Boolean)) {
      const w = tok.replace(/^[.'/-]+|[.'/-]+$/g, '');
      const isWord = /^[A-Za-z][a-z]+(?:'[a-z]+)?$/.test(w) && !KEEP.test(w) && !extraKeep.some((r) => r.test(w));
      if (isWord) cur.push(w); else flush();
    }
    flush();
  }
  return runs;
}

/** The text of an element without the parts marked lang="en" (messages from the engine or
 * the browser that have no translation, shown as they are). */
export function translatedText(el: Element): string {
  const c = el.cloneNode(true) as Element;
  c.querySelectorAll('[lang="en"]').forEach((n) => n.remove());
  return c.textContent ?? '';
}
