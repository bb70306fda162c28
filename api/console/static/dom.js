// DOM building without HTML strings: every value from the API becomes a
// text node or an attribute, never markup. The console's CSP forbids
// inline styles, so sizes are SVG attributes, never style.

const SVG_NS = 'http://www.w3.org/2000/svg';

// h builds an HTML element: h('a', {href, 'data-testid': 'x'}, 'text', child).
// Attributes that are null, undefined or false are left out; on* functions
// become listeners; children that are not nodes become text.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

// svg builds an SVG element in the SVG namespace, like h.
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

// Properties rather than attributes: what the user sees in a form field.
const PROPS = new Set(['value', 'checked', 'disabled', 'selected']);

function setAttrs(el, attrs) {
  if (!attrs) return;
  for (const [name, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (name === 'style') throw new Error('inline styles are refused by the console\'s CSP');
    if (name.startsWith('on') && typeof v === 'function') {
      el.addEventListener(name.slice(2), v);
    } else if (PROPS.has(name)) {
      el[name] = v;
    } else {
      el.setAttribute(name, v === true ? '' : String(v));
    }
  }
}

// replace sets el's children as h does: arrays flattened, null left out
// (replaceChildren would show "null").
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// link builds an in-console link to a hash route.
export function link(hash, text, attrs = {}) {
  return h('a', { href: hash, ...attrs }, text);
}

// externalLink opens another site in a new tab without giving it this window.
export function externalLink(href, text, attrs = {}) {
  return h('a', { href, target: '_blank', rel: 'noopener noreferrer', ...attrs }, text);
}

// badge is a small coloured label; kind is ok, fail, warn or muted.
export function badge(text, kind, attrs = {}) {
  return h('span', { class: `badge badge-${kind}`, ...attrs }, text);
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

// zoneName names the browser's offset from UTC at d (now by default), as
// 'UTC' or 'UTC+05:30': every time the console shows or takes is in the
// browser's zone, and says which.
export function zoneName(d = new Date()) {
  const off = -d.getTimezoneOffset();
  if (off === 0) return 'UTC';
  const a = Math.abs(off);
  return `UTC${off < 0 ? '-' : '+'}${pad(Math.floor(a / 60))}:${pad(a % 60)}`;
}

// fmtTime shows an RFC 3339 time in the browser's zone, to the second,
// with the zone: '2026-11-24 08:42:05 UTC+05:30'.
export function fmtTime(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${zoneName(d)}`;
}

// time is a <time> element showing fmtTime, the exact value (as the API
// answered it, in UTC) on hover.
export function time(iso) {
  return h('time', { datetime: iso || null, title: iso || null }, fmtTime(iso));
}

// moduleName shows a module by its name, its slug beside it; a module the
// API could not name (deleted since) by its id.
export function moduleName(m, testid = 'module-name') {
  if (!m || !m.name) return h('code', { class: 'id', 'data-testid': testid }, m ? m.id : '');
  return h('span', { class: 'module', 'data-testid': testid, 'data-module-id': m.id, title: m.id },
    m.name, ' ', h('span', { class: 'muted small mono' }, m.slug));
}

// fmtMs shows a duration in milliseconds; null is a dash.
export function fmtMs(ms) {
  if (ms === null || ms === undefined) return '—';
  if (ms >= 10000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms >= 100) return `${Math.round(ms)} ms`;
  return `${Number(ms).toFixed(1)} ms`;
}

// fmtRate shows a 0..1 share as a percentage; null is a dash.
export function fmtRate(r) {
  if (r === null || r === undefined) return '—';
  const p = r * 100;
  return `${p === 100 || p === 0 ? p.toFixed(0) : p.toFixed(1)} %`;
}

// toLocalInput turns an RFC 3339 time into a datetime-local value.
export function toLocalInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// fromLocalInput turns a datetime-local value into RFC 3339 (UTC); '' for
// an empty value, null for one that is not a time.
export function fromLocalInput(v) {
  if (!v) return '';
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

// prettyBody shows a JSON body indented (and its \u escapes as the
// characters they stand for); anything else as it is.
export function prettyBody(text) {
  const t = text.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return text;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch {
    return text;
  }
}
