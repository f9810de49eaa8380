// Debian's Firefox ESR driven by puppeteer-core over WebDriver BiDi, the one way the tests
// start it (playwright-core drives only its own patched Firefox builds, never Debian's).
// puppeteer-core downloads no browser; `make setup` installs the firefox-esr package.
import { existsSync } from 'node:fs';
import puppeteer from 'puppeteer-core';

export const FIREFOX = process.env.FIREFOX ?? '/usr/bin/firefox-esr';

/** A clear refusal when the browser is missing, with the command that installs it. */
export function firefoxMissing() {
  return existsSync(FIREFOX) ? null
    : `Firefox ESR is not installed (${FIREFOX}): run \`make setup\` (as root) or \`sudo apt-get install firefox-esr\`, or set FIREFOX to its path`;
}

export function launchFirefox() {
  const missing = firefoxMissing();
  if (missing) throw new Error(missing);
  return puppeteer.launch({
    browser: 'firefox',
    protocol: 'webDriverBiDi',
    executablePath: FIREFOX,
    headless: true,
    // this machine's closed network: nothing fetched in the background, no first-run pages
    extraPrefsFirefox: {
      'app.update.enabled': false,
      'browser.safebrowsing.downloads.remote.enabled': false,
      'network.captive-portal-service.enabled': false,
      'network.connectivity-service.enabled': false,
    },
  });
}
