// Pieces every panel shows: its header, loading and error states, and
// links to the Temporal Web UI.

import { h, externalLink, prettyBody } from './dom.js';

export function header(title, ...actions) {
  return h('div', { class: 'panel-head' }, h('h1', null, title), h('div', { class: 'panel-actions' }, actions));
}

export function loading(what) {
  return h('p', { class: 'loading', 'data-testid': 'loading', role: 'status' }, `Loading ${what}…`);
}

// errorBox shows an API error: its message, code and request id (which the
// service's logs carry), and per-field details.
export function errorBox(err, testid = 'error') {
  return h('div', { class: 'error', role: 'alert', 'data-testid': testid },
    h('strong', null, err.message || String(err)),
    err.code ? h('span', { class: 'muted' }, ` (${err.code}${err.status ? `, HTTP ${err.status}` : ''})`) : null,
    err.requestId ? h('div', { class: 'muted small' }, 'request id ', h('code', { 'data-testid': 'request-id' }, err.requestId)) : null,
    err.details && err.details.length
      ? h('ul', { class: 'details' }, err.details.map((d) => h('li', null, h('code', null, d.field || ''), ' ', d.message || '')))
      : null);
}

export function refreshButton(onClick, testid) {
  return h('button', { type: 'button', class: 'secondary', 'data-testid': testid, onclick: onClick }, 'Refresh');
}

// temporalURL is the Web UI page of a workflow run's history, or '' when
// no UI is configured or the attempt ran in no workflow (a skipped row).
export function temporalURL(config, workflowID, runID) {
  if (!config.temporalUI || !workflowID) return '';
  const ns = encodeURIComponent(config.namespace);
  return `${config.temporalUI}/namespaces/${ns}/workflows/${encodeURIComponent(workflowID)}/${encodeURIComponent(runID || '')}/history`;
}

export function temporalLink(config, workflowID, runID, text = 'Temporal') {
  const url = temporalURL(config, workflowID, runID);
  return url ? externalLink(url, text, { 'data-testid': 'temporal-link', title: `workflow ${workflowID}` }) : null;
}

// bodyView shows a body as text, a JSON body indented, with the exact
// bytes one click away.
export function bodyView(text, testid) {
  if (!text) return h('p', { class: 'muted', 'data-testid': testid }, 'No body.');
  const pretty = prettyBody(text);
  return h('div', { class: 'body-view' },
    h('pre', { 'data-testid': testid }, pretty),
    pretty !== text
      ? h('details', null, h('summary', null, 'Exact bytes'), h('pre', { 'data-testid': `${testid}-raw` }, text))
      : null);
}
