// The addresses students can open the class server at: main.mjs prints them at start and
// GET /api/server gives them to the page, which shows the teacher a join link and its QR
// code. A server listening on 0.0.0.0 (or ::) cannot name one address for itself, and
// 0.0.0.0 in a link reaches nothing on a student's machine, so every address of this
// machine's network interfaces is listed instead.
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { loopbackOnly } from './config.mjs';

/** 0.0.0.0 and :: listen on every interface (:: takes IPv4 too, unless IPv6-only). */
export const wildcardHost = (host) => host === '0.0.0.0' || host === '::' || host === '[::]' || host === '::0';

/** Interfaces of containers, VMs and tunnels made by software on this machine (Docker,
 * libvirt, LXC, veth pairs): listed after the real ones, since a classroom's students are
 * on the network of a real interface and the page shows the first address. */
const VIRTUAL_IFACE = /^(docker|br-|virbr|veth|lxc|lxd|cni|flannel|cali|vnet|vmnet|vboxnet|podman|tailscale|zt|wg|tun|tap)/;

/** `http://ADDRESS:PORT/`, with an IPv6 address in brackets. */
export function httpUrl(address, port) {
  return isIP(address) === 6 ? `http://[${address}]:${port}/` : `http://${address}:${port}/`;
}

/**
 * The addresses students on other machines can use, as `{ url, address, iface }`, the first
 * the most likely one: for a wildcard host every non-internal IPv4 address (0.0.0.0), and
 * the IPv6 ones too for :: (link-local fe80:: addresses left out: a browser cannot open
 * them without the interface's zone); for any other host just that one; none for a host
 * that only this machine reaches (127.0.0.1, ::1, localhost). `interfaces`: what
 * os.networkInterfaces() returns (tests pass their own).
 */
export function studentAddresses(host, port, interfaces = networkInterfaces()) {
  const h = host.replace(/^\[(.*)\]$/, '$1');
  if (loopbackOnly(h)) return [];
  if (!wildcardHost(host)) return [{ url: httpUrl(h, port), address: h, iface: null }];
  const v6 = h !== '0.0.0.0';
  const found = [];
  for (const [iface, addrs] of Object.entries(interfaces)) {
    for (const a of addrs ?? []) {
      if (a.internal) continue;
      const fam = a.family === 'IPv6' || a.family === 6 ? 6 : 4;
      if (fam === 6 && (!v6 || /^fe[89ab]/i.test(a.address))) continue;
      found.push({ url: httpUrl(a.address, port), address: a.address, iface, fam, virtual: VIRTUAL_IFACE.test(iface) });
    }
  }
  // Real interfaces first, IPv4 before IPv6; otherwise in the system's order.
  const rank = (a) => (a.virtual ? 2 : 0) + (a.fam === 6 ? 1 : 0);
  const seen = new Set();
  return found
    .map((a, i) => ({ a, i }))
    .sort((x, y) => rank(x.a) - rank(y.a) || x.i - y.i)
    .filter(({ a }) => !seen.has(a.url) && seen.add(a.url))
    .map(({ a }) => ({ url: a.url, address: a.address, iface: a.iface }));
}

/** How this machine opens the server itself (the first line main.mjs prints): a wildcard
 * host at 127.0.0.1. */
export function localUrl(host, port) {
  return httpUrl(wildcardHost(host) ? '127.0.0.1' : host.replace(/^\[(.*)\]$/, '$1'), port);
}
