/* Entry point: paint the shell at once, load the WebAssembly engine, then the app. */
import { createRoot } from 'react-dom/client';
import { App } from './App';
import { getEngine } from './engine';
import './style.css';

const root = createRoot(document.getElementById('app')!);
getEngine().then(
  (engine) => root.render(<App engine={engine} />),
  (e: Error) => {
    const p = document.getElementById('status');
    if (p) { p.textContent = `The translation engine failed to load: ${e.message}. Reload the page; if it persists, rebuild with make build.`; p.className = 'error'; }
  },
);
