// The deliveries panels: the attempts list with its filters, and one
// attempt in full with its timing, request, response and a replay.

import { h, replace, svg, link, badge, fmtMs, time, zoneName, toLocalInput, fromLocalInput } from './dom.js';
import { request, adminPath, withQuery } from './api.js';
import { header, loading, errorBox, refreshButton, temporalLink, bodyView } from './panel.js';
import { pageOf, setPage, pager } from './pager.js';

const PAGE_SIZE = 50;

// The values of the API's filters (models.EventTypes, models.DeliveryErrors).
const EVENT_TYPES = ['record_created', 'record_updated', 'record_deleted', 'status_change', 'custom_data_updated', 'endpoint_disabled'];
const ERROR_CODES = ['timeout', 'connection_refused', 'dns', 'tls', 'blocked_destination', 'http_status', 'endpoint_gone',
  'endpoint_disabled', 'connection', 'in_flight', 'worker_lost', 'event_gone', 'canceled', 'internal', 'auth_failed'];

// The filters kept in the hash, as the API names them.
const FILTERS = ['endpoint_id', 'event_id', 'record_id', 'event_type', 'succeeded', 'error', 'since', 'until'];

// watch is a replay the user just started: the list of its event polls
// until the new attempt (replay_of set) has finished, for up to 30 s.
let watch = null;

// listHash is the hash of a page of the list with filters; the first
// page when page is absent.
function listHash(filters, page) {
  const q = new URLSearchParams();
  for (const k of FILTERS) if (filters[k]) q.set(k, filters[k]);
  if (page) setPage(q, page);
  const s = q.toString();
  return s ? `#/deliveries?${s}` : '#/deliveries';
}

export async function deliveriesPanel(ctx, params) {
  const filters = {};
  for (const k of FILTERS) filters[k] = params.get(k) || '';
  const page = pageOf(params);
  const body = h('div', { class: 'deliveries' }, loading('deliveries'));
  const banner = h('div', { class: 'banner-slot' });
  replace(ctx.main,
    header('Deliveries', refreshButton(ctx.reload, 'deliveries-refresh')),
    filterForm(ctx, filters),
    banner,
    body);
  let res;
  try {
    res = await request('GET', withQuery('/api/admin/webhook-deliveries', { limit: PAGE_SIZE, ...filters, cursor: page.cursor }));
  } catch (err) {
    if (ctx.alive()) replace(body, errorBox(err));
    return;
  }
  if (!ctx.alive()) return;
  const rows = res.data || [];
  replace(body,
    rows.length
      ? table(ctx, rows)
      : h('p', { class: 'empty', 'data-testid': 'deliveries-empty' }, 'No attempts match these filters.'),
    pager({
      page, res, size: PAGE_SIZE, noun: 'attempt', hashOf: (p) => listHash(filters, p),
      ids: { pager: 'deliveries-pager', prev: 'page-prev', info: 'page-info', next: 'page-next' },
    }));
  showWatch(ctx, banner, filters, rows);
}

function showWatch(ctx, banner, filters, rows) {
  if (!watch || watch.eventID !== filters.event_id) return;
  const arrived = rows.find((r) => r.replay_of === watch.replayOf && r.finished_at);
  const w = watch;
  if (arrived) {
    watch = null;
    replace(banner, h('p', { class: 'banner ok', role: 'status', 'data-testid': 'replay-banner', 'data-state': 'arrived' },
      `Replay of ${w.replayOf} attempted: `, link(`#/deliveries/${encodeURIComponent(arrived.id)}`, arrived.succeeded ? 'succeeded' : 'failed'), '.'));
    return;
  }
  if (Date.now() > w.until) {
    watch = null;
    replace(banner, h('p', { class: 'banner warn', role: 'status', 'data-testid': 'replay-banner', 'data-state': 'waiting' },
      `Replay of ${w.replayOf} started (workflow ${w.workflowID}); its attempt has not finished yet — use Refresh.`));
    return;
  }
  replace(banner, h('p', { class: 'banner', role: 'status', 'data-testid': 'replay-banner', 'data-state': 'waiting' },
    `Replay of ${w.replayOf} started (workflow ${w.workflowID}); waiting for its attempt…`));
  setTimeout(() => {
    if (ctx.alive()) ctx.reload();
  }, 1000);
}

function filterForm(ctx, f) {
  const select = (name, testid, options, value) => h('select', { name, 'data-testid': testid },
    options.map(([v, text]) => h('option', { value: v, selected: v === value }, text)));
  const input = (name, testid, value, attrs = {}) => h('input', { name, 'data-testid': testid, value, ...attrs });
  const fields = {
    endpoint_id: input('endpoint_id', 'filter-endpoint', f.endpoint_id, { placeholder: 'whe_…', size: 24 }),
    event_id: input('event_id', 'filter-event', f.event_id, { placeholder: 'evt_…', size: 24 }),
    record_id: input('record_id', 'filter-record', f.record_id, { placeholder: 'rec_…', size: 24 }),
    event_type: select('event_type', 'filter-event-type', [['', 'any'], ...EVENT_TYPES.map((t) => [t, t])], f.event_type),
    succeeded: select('succeeded', 'filter-status', [['', 'any'], ['true', 'succeeded'], ['false', 'failed']], f.succeeded),
    error: select('error', 'filter-error', [['', 'any'], ...ERROR_CODES.map((c) => [c, c])], f.error),
    since: input('since', 'filter-since', toLocalInput(f.since), { type: 'datetime-local', step: 1 }),
    until: input('until', 'filter-until', toLocalInput(f.until), { type: 'datetime-local', step: 1 }),
  };
  const problem = h('span', { class: 'field-error', 'data-testid': 'filter-error-message' });
  const label = (text, el) => h('label', null, text, el);
  const form = h('form', { class: 'filters', 'data-testid': 'deliveries-filters', novalidate: true },
    label('Endpoint', fields.endpoint_id),
    label('Event id', fields.event_id),
    label('Record id', fields.record_id),
    label('Event type', fields.event_type),
    label('Status', fields.succeeded),
    label('Error', fields.error),
    label(`Since (${zoneName()})`, fields.since),
    label(`Until (${zoneName()})`, fields.until),
    h('div', { class: 'filter-actions' },
      h('button', { type: 'submit', 'data-testid': 'filter-apply' }, 'Apply'),
      link('#/deliveries', 'Clear', { class: 'button secondary', 'data-testid': 'filter-clear' }),
      problem));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const next = {};
    for (const k of ['endpoint_id', 'event_id', 'record_id', 'event_type', 'succeeded', 'error']) next[k] = fields[k].value.trim();
    for (const k of ['since', 'until']) {
      const v = fromLocalInput(fields[k].value);
      if (v === null) {
        problem.textContent = `${k} is not a date and time`;
        return;
      }
      next[k] = v;
    }
    ctx.navigate(listHash(next));
  });
  return form;
}

// status shows an attempt's outcome: ok or failed with the response code,
// in flight, or skipped (attempt 0, the endpoint was disabled).
function status(d) {
  const code = d.response_status ? ` ${d.response_status}` : '';
  if (d.succeeded) return badge(`ok${code}`, 'ok', { 'data-testid': 'delivery-status', 'data-status': 'succeeded' });
  if (d.error === 'in_flight') return badge('in flight', 'warn', { 'data-testid': 'delivery-status', 'data-status': 'in_flight' });
  if (d.attempt === 0) return badge('skipped', 'muted', { 'data-testid': 'delivery-status', 'data-status': 'skipped' });
  return badge(`failed${code}`, 'fail', { 'data-testid': 'delivery-status', 'data-status': 'failed' });
}

// recordLink links a record id to its deliveries (the record filter).
function recordLink(recordID, attrs = {}) {
  return link(`#/deliveries?record_id=${encodeURIComponent(recordID)}`, recordID, { class: 'mono id', title: 'all attempts of this record', ...attrs });
}

// endpoint shows the endpoint an attempt went to: the URL it was sent to
// (the endpoint's URL then; the API keeps it with every attempt, so no
// second call is needed), and its id, a link to its attempts. An attempt
// that never loaded its endpoint (its event or endpoint was gone) has no
// URL: the id alone.
function endpoint(d, testid) {
  return [
    d.request_url ? h('div', { class: 'mono url', 'data-testid': testid }, d.request_url) : null,
    link(`#/deliveries?endpoint_id=${encodeURIComponent(d.endpoint_id)}`, d.endpoint_id,
      { class: d.request_url ? 'mono small id muted-link' : 'mono id', title: 'all attempts to this endpoint' }),
  ];
}

function table(ctx, rows) {
  return h('div', { class: 'table-wrap' }, h('table', { class: 'list', 'data-testid': 'deliveries-table' },
    h('thead', null, h('tr', null,
      ['Started', 'Event', 'Endpoint', 'Attempt', 'Status', 'Error', 'Duration', 'Replay', 'Workflow'].map((t) => h('th', null, t)))),
    h('tbody', null, rows.map((d) => h('tr', {
      'data-testid': 'delivery-row', 'data-delivery-id': d.id, 'data-replay-of': d.replay_of || null, 'data-record-id': d.record_id || null,
      'data-status': d.succeeded ? 'succeeded' : 'failed',
    },
    h('td', { class: 'nowrap' }, link(`#/deliveries/${encodeURIComponent(d.id)}`, time(d.started_at), { 'data-testid': 'delivery-link' })),
    h('td', null, h('div', null, d.event_type),
      h('div', null, link(`#/deliveries?event_id=${encodeURIComponent(d.event_id)}`, d.event_id, { class: 'small mono id', title: 'all attempts of this event' })),
      d.record_id ? h('div', { class: 'small' }, 'record ', recordLink(d.record_id, { 'data-testid': 'delivery-record-link' })) : null),
    h('td', { class: 'endpoint-cell' }, endpoint(d, 'delivery-endpoint-url')),
    h('td', { class: 'num' }, d.attempt === 0 ? '—' : String(d.attempt)),
    h('td', null, status(d)),
    h('td', { class: 'nowrap', title: d.error_message || null }, d.error ? h('code', null, d.error) : ''),
    h('td', { class: 'num' }, d.finished_at ? fmtMs(d.duration_ms) : '—'),
    h('td', null, d.replay_of
      ? link(`#/deliveries/${encodeURIComponent(d.replay_of)}`, '↻ replay', { class: 'small', title: `replay of ${d.replay_of}`, 'data-testid': 'delivery-replay-of' })
      : ''),
    h('td', null, temporalLink(ctx.config, d.workflow_id, d.run_id, 'Temporal ↗')))))));
}

export async function attemptPanel(ctx, _params, id) {
  const body = h('div', { class: 'attempt' }, loading('the attempt'));
  replace(ctx.main,
    header('Attempt', refreshButton(ctx.reload, 'attempt-refresh')),
    body);
  let d;
  try {
    d = await request('GET', adminPath('webhook-deliveries', id));
  } catch (err) {
    if (ctx.alive()) replace(body, errorBox(err));
    return;
  }
  if (!ctx.alive()) return;
  const result = h('div', { class: 'replay-result' });
  const replay = h('button', {
    type: 'button', 'data-testid': 'attempt-replay',
    onclick: async () => {
      replay.disabled = true;
      replace(result, h('p', { class: 'loading', role: 'status' }, 'Starting a replay…'));
      let res;
      try {
        res = await request('POST', adminPath('webhook-deliveries', d.id, 'replay'));
      } catch (err) {
        replay.disabled = false;
        if (ctx.alive()) replace(result, errorBox(err, 'replay-error'));
        return;
      }
      if (!ctx.alive()) return;
      watch = { eventID: d.event_id, replayOf: d.id, workflowID: res.workflow_id, until: Date.now() + 30000 };
      ctx.navigate(`#/deliveries?event_id=${encodeURIComponent(d.event_id)}`);
    },
  }, 'Replay');
  const row = (label, ...value) => h('div', null, h('dt', null, label), h('dd', null, value));
  replace(body,
    h('div', { class: 'attempt-head' },
      h('h2', { class: 'mono id', 'data-testid': 'attempt-id' }, d.id),
      status(d),
      h('div', { class: 'actions' }, replay, temporalLink(ctx.config, d.workflow_id, d.run_id, 'Workflow in Temporal'))),
    result,
    h('dl', { class: 'kv', 'data-testid': 'attempt-fields' },
      row('Response status', h('span', { 'data-testid': 'attempt-response-status' }, d.response_status === null ? '—' : String(d.response_status))),
      row('Error', d.error ? h('span', { class: 'prose', 'data-testid': 'attempt-error' }, h('code', null, d.error), ' ', d.error_message || '') : '—'),
      row('Request URL', h('span', { class: 'mono url', 'data-testid': 'attempt-url' }, d.request_url || '—')),
      row('Remote IP', d.remote_ip || '—'),
      row('Started', time(d.started_at)),
      row('Finished', d.finished_at ? time(d.finished_at) : 'in flight'),
      row('Attempt', String(d.attempt), d.replay_of
        ? h('span', null, ' · replay of ', link(`#/deliveries/${encodeURIComponent(d.replay_of)}`, d.replay_of, { class: 'mono', 'data-testid': 'attempt-replay-of' }))
        : null),
      row('Event', `${d.event_type} `, link(`#/deliveries?event_id=${encodeURIComponent(d.event_id)}`, d.event_id, { class: 'mono id', 'data-testid': 'attempt-event-link' })),
      row('Record', d.record_id ? recordLink(d.record_id, { 'data-testid': 'attempt-record-link' }) : '—'),
      row('Endpoint', endpoint(d, 'attempt-endpoint-url')),
      row('Workflow', d.workflow_id ? h('span', { class: 'mono small id' }, d.workflow_id, ' / ', d.run_id) : '—')),
    h('h3', null, 'Timing'),
    timingBar(d),
    h('h3', null, 'Request'),
    headersTable(d.request_headers, 'request-headers'),
    bodyView(d.request_body, 'request-body'),
    h('h3', null, 'Response'),
    headersTable(d.response_headers, 'response-headers'),
    bodyView(d.response_body, 'response-body'));
}

const PHASES = [
  ['dns', 'DNS', 'dns_ms'],
  ['connect', 'connect', 'connect_ms'],
  ['tls', 'TLS', 'tls_ms'],
  ['first-byte', 'first byte', 'first_byte_ms'],
];
const BAR_WIDTH = 600;
const BAR_HEIGHT = 18;

// timingBar draws the attempt's phases one after another on a bar as long
// as its duration; the rest is reading the response.
function timingBar(d) {
  const total = d.duration_ms || 0;
  const parts = PHASES.filter(([, , k]) => d[k] !== null && d[k] !== undefined).map(([cls, label, k]) => ({ cls, label, ms: d[k] }));
  const sum = parts.reduce((a, p) => a + p.ms, 0);
  if (total > sum) parts.push({ cls: 'rest', label: 'rest', ms: total - sum });
  const scale = BAR_WIDTH / Math.max(total, sum, 0.001);
  const bar = svg('svg', {
    class: 'timing', width: BAR_WIDTH, height: BAR_HEIGHT, viewBox: `0 0 ${BAR_WIDTH} ${BAR_HEIGHT}`,
    role: 'img', 'aria-label': `timing of the attempt, ${fmtMs(total)} in all`, 'data-testid': 'timing-bar',
  }, svg('rect', { class: 'slot', x: 0, y: 0, width: BAR_WIDTH, height: BAR_HEIGHT }));
  let x = 0;
  for (const p of parts) {
    const w = Math.max(p.ms > 0 ? 1 : 0, p.ms * scale);
    bar.append(svg('rect', { class: `phase ${p.cls}`, x: x.toFixed(2), y: 0, width: w.toFixed(2), height: BAR_HEIGHT, 'data-testid': `timing-${p.cls}` },
      svg('title', null, `${p.label} ${fmtMs(p.ms)}`)));
    x += p.ms * scale;
  }
  const legend = h('ul', { class: 'legend', 'data-testid': 'timing-legend' },
    PHASES.map(([cls, label, k]) => h('li', null, h('span', { class: `swatch ${cls}` }), `${label} `,
      h('span', { 'data-testid': `timing-${cls}-ms` }, fmtMs(d[k])))),
    h('li', null, h('span', { class: 'swatch rest' }), 'total ',
      h('strong', { 'data-testid': 'timing-total', 'data-ms': total }, d.finished_at ? fmtMs(total) : 'in flight')));
  return h('div', { class: 'timing-box' }, bar, legend);
}

function headersTable(headers, testid) {
  const names = Object.keys(headers || {}).sort();
  if (names.length === 0) return h('p', { class: 'muted', 'data-testid': testid }, 'No headers.');
  return h('table', { class: 'headers', 'data-testid': testid },
    h('tbody', null, names.map((n) => h('tr', null, h('th', null, n), h('td', { class: 'mono' }, (headers[n] || []).join(', '))))));
}
