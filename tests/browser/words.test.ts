/* The views in a learner's words, in headless Chromium, in English, Japanese and Chinese:
 * no engine identifier (a step kind, a result, an outcome or a field name as the engine
 * spells it: `eptp_list`, `misconfig`, `lvl`, `stage`...; an example's file name, a paging
 * or mode id, a benchmark's case name, the result format's version) reaches the rendered
 * text of any tab: the scenario picker's entries, the mode badge, the playground's selects,
 * the example descriptions, the Results charts' labels and the footer included. Code is
 * left out (JSON in the editor, `code` and `pre`), where the engine's own names are what a
 * learner types. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { appInChromium } from './chromium';

const session = appInChromium();

const TABS: [string, string, string][] = [
  ['walk, a nested step', '?example=ept-4k&access=0&step=3', '#counter'],
  ['walk, the last step', '?example=ept-4k&access=0&step=24', '#counter'],
  ['walk, a misconfiguration', '?example=ept-misconfig&access=0&step=5', '#counter'],
  ['walk, VMFUNC', '?example=vmfunc-gate&access=2&step=1', '[data-testid="vmfunc-panel"] table.eptp-list'],
  ['walk, shadow', '?example=shadow&access=8&step=10', '#outcome.done'],
  ['walk, npt A/D', '?example=npt-fault-walk&access=0&step=3', '#counter'],
  ['memory', '?view=memory&example=shadow&access=0&step=3', 'svg.memsvg'],
  ['compare', '?view=compare', '[data-testid="compare-ordering"]'],
  ['compare, tables filled on demand', '?view=compare&tables=on-demand', '[data-testid="compare-ordering"]'],
  ['playground', '?view=playground&example=ept-4k', '[data-testid="toggles"]'],
  ['results', '?view=results', '.results-page'],
  ['lessons', '?view=lessons&lesson=ept-and-npt', '.prose'],
  ['live', '?view=live', 'body[data-live-ready="1"]'],
];

// every bundled example's file name (what the picker showed before it had titles)
const EXAMPLE_FILES = readdirSync(join(__dirname, '..', '..', 'wasm-core', 'examples')).filter((f) => f.endsWith('.json')).map((f) => f.slice(0, -5))
  .filter((n) => n.includes('-'));   // 'shadow' is also a word
const FILE_NAMES = new RegExp(`(?<![\\w-])(${EXAMPLE_FILES.map((n) => n.replace(/-/g, '\\-')).join('|')})(?![\\w-])`, 'g');
const ENGINE_WORDS = /\b(4level|5level|32bit|flush_on_eptp_switch|guest\.pcid|cpuid_leaf0\w*|vmcall_bench|svm_npt|vmsim-result\/1|vmsim \d)\b|\b(ept|npt) · /g;
const IDENT = /\b(eptp_list|misconfig|lvl|stage|ad_write|vmm_fill|tlb_hit|pwc_hit|ntlb_hit|not_present|guest_page_fault|ept_violation|ept_misconfig|npt_fault|flat_fault|invalid_opcode|hidden_page_fault|reflected_page_fault|pt_write|cr3_write|memory_refs|entry_hpa)\b/g;

describe('no engine identifier in the rendered text', () => {
  for (const lang of ['en', 'ja', 'zh'])
  for (const [name, query, ready] of TABS) {
    // every tab in English; in Japanese and Chinese the tabs whose words come from elsewhere
    if (lang !== 'en' && name.startsWith('walk, ') && !['walk, a misconfiguration', 'walk, shadow'].includes(name)) continue;
    it(`${name} (${lang})`, async () => {
      const page = await session.browser.newPage({ viewport: { width: 1200, height: 900 } });
      await page.goto(`${session.url}${query}&lang=${lang}`);
      await page.waitForSelector(ready, { timeout: ready.includes('live-ready') ? 60_000 : 15_000 });
      // each text node on its own (cells run together in textContent), code left out
      const text = await page.evaluate(() => {
        const out: string[] = [];
        const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode())
          if (!n.parentElement!.closest('code, pre, .cm-editor, textarea, script, style')) out.push(n.textContent!);
        return out.join(' \n ');
      });
      const found = [...text.matchAll(IDENT), ...text.matchAll(FILE_NAMES), ...text.matchAll(ENGINE_WORDS)];
      const hits = [...new Set(found.map((m) => text.slice(Math.max(0, m.index! - 40), m.index! + 40).replace(/\s+/g, ' ')))];
      await page.close();
      expect(hits).toEqual([]);
    }, 90_000);
  }
});
