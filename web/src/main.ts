/* The first page: proves the WebAssembly engine runs in the browser by walking the
 * bundled example scenarios and listing every memory reference. The walkthrough app
 * (animated views, playground, lessons) builds on this module. */
import { loadVmsim, ScenarioError, type Scenario, type Result } from '../../wasm-core/js/vmsim';

const examples = import.meta.glob('../../wasm-core/examples/*.json', { eager: true, import: 'default' }) as Record<
  string,
  Scenario
>;

const app = document.getElementById('app')!;
const status = document.getElementById('status')!;

function render(result: Result) {
  const a = result.accesses[0];
  const rows = a.steps
    .map(
      (s) =>
        `<tr><td>${s.n}</td><td>${s.ref ?? ''}</td><td>${s.kind}</td><td class="${s.dim}">${s.dim}</td><td>${s.level}</td>` +
        `<td>${s.dim === 'nested' ? (s.stage ? 'G' + s.stage : 'final') : ''}</td><td>${s.gpa ?? ''}</td>` +
        `<td>${s.entry_hpa}</td><td>${s.entry}</td><td>${s.flags.join(' ')}</td><td>${s.result}</td></tr>`,
    )
    .join('');
  return (
    `<p id="summary">${result.name}: ${a.op} ${a.gva} → <strong>${a.outcome}</strong>` +
    `${a.hpa ? ', hpa ' + a.hpa : ''}; <span id="refs">${a.memory_refs}</span> memory references ` +
    `(${a.guest_refs} guest + ${a.nested_refs} nested)</p>` +
    `<table><thead><tr><th>#</th><th>ref</th><th>kind</th><th>dim</th><th>level</th><th>stage</th><th>gpa</th>` +
    `<th>entry hpa</th><th>entry</th><th>flags</th><th>result</th></tr></thead><tbody>${rows}</tbody></table>`
  );
}

async function main() {
  try {
    const engine = await loadVmsim();
    const names = Object.keys(examples).sort();
    const pick = document.createElement('select');
    pick.id = 'example';
    pick.setAttribute('aria-label', 'Example scenario');
    for (const n of names) {
      const o = document.createElement('option');
      o.value = n;
      o.textContent = examples[n].name;
      pick.append(o);
    }
    const out = document.createElement('section');
    out.id = 'walk';
    const show = () => {
      try {
        out.innerHTML = render(engine.run(examples[pick.value]));
      } catch (e) {
        out.innerHTML = `<p class="error">${e instanceof ScenarioError ? 'Scenario error: ' : ''}${(e as Error).message}</p>`;
      }
    };
    pick.addEventListener('change', show);
    pick.value = names.find((n) => n.endsWith('/ept-4k.json')) ?? names[0];
    status.textContent = `${engine.version} loaded. Pick a scenario:`;
    app.append(pick, out);
    show();
  } catch (e) {
    status.textContent = `The translation engine failed to load: ${(e as Error).message}`;
    status.className = 'error';
  }
}

main();
