// The endpoints panel: each webhook endpoint with its health, its last
// 24 hours of attempts, and the actions support needs (enable or disable,
// its deliveries, a recovery, a resync, its signing secret, its custom headers'
// values), 20 to a page; the page
// is in the hash (#/endpoints?page=2), so Refresh and a toggle keep it.

import { h, replace, svg, link, badge, fmtMs, fmtRate, fmtTime, time, zoneName, moduleName, fromLocalInput } from './dom.js';
import { request, adminPath, withQuery } from './api.js';
import { header, loading, errorBox, refreshButton } from './panel.js';
import { resyncForm } from './resync.js';

// PAGE_SIZE is smaller than the deliveries': each endpoint on the page
// carries its statistics (24 hourly rollup rows read per endpoint).
const PAGE_SIZE = 20;

function pageHash(page) {
  return page > 1 ? `#/endpoints?page=${page}` : '#/endpoints';
}

export async function endpointsPanel(ctx, params) {
  const page = Math.max(1, parseInt(params.get('page') || '1', 10) || 1);
  const body = h('div', { class: 'endpoints' }, loading('endpoints'));
  replace(ctx.main, header('Webhook endpoints', refreshButton(ctx.reload, 'endpoints-refresh')), body);
  let res;
  try {
    res = await request('GET', withQuery('/api/admin/webhook-endpoints', { include: 'stats', limit: PAGE_SIZE, page }));
  } catch (err) {
    if (ctx.alive()) replace(body, errorBox(err));
    return;
  }
  if (!ctx.alive()) return;
  const eps = res.data || [];
  const total = res.total;
  if (total === 0) {
    replace(body, h('p', { class: 'empty', 'data-testid': 'endpoints-empty' }, 'No webhook endpoints yet.'));
    return;
  }
  const pages = Math.max(1, Math.ceil(total / PAGE_SIZE));
  const first = (page - 1) * PAGE_SIZE + 1;
  const summary = pages === 1
    ? `${total} endpoint${total === 1 ? '' : 's'}`
    : eps.length ? `Endpoints ${first}–${first + eps.length - 1} of ${total}` : `${total} endpoints`;
  replace(body,
    h('p', { class: 'muted', 'data-testid': 'endpoints-total', 'data-total': total }, `${summary}; statistics cover the last 24 hours.`),
    eps.length
      ? eps.map((e) => card(ctx, e))
      // A page past the end: endpoints were deleted, or the hash was typed.
      : h('p', { class: 'empty', 'data-testid': 'endpoints-page-empty' }, 'No endpoints on this page. ',
        link(pageHash(pages), `Go to page ${pages}.`)),
    pager(page, pages, total));
}

// pager links the neighbouring pages; past the end, Previous goes to the
// last page.
function pager(page, pages, total) {
  const pageLink = (p, text, testid) => (p >= 1 && p <= pages && p !== page)
    ? link(pageHash(p), text, { class: 'button secondary', 'data-testid': testid })
    : h('span', { class: 'button secondary disabled', 'aria-disabled': 'true', 'data-testid': testid }, text);
  return h('div', { class: 'pager', 'data-testid': 'endpoints-pager' },
    pageLink(Math.min(page - 1, pages), '← Previous', 'endpoints-prev'),
    h('span', { 'data-testid': 'endpoints-page-info', 'data-total': total, 'data-page': page, 'data-pages': pages },
      `Page ${page} of ${pages} · ${total} endpoint${total === 1 ? '' : 's'}`),
    pageLink(page + 1, 'Next →', 'endpoints-next'));
}

const HEALTH_KIND = { healthy: 'ok', failing: 'warn', disabled: 'fail' };

// What an endpoint's URL names. A broker URL comes from the API with its
// password already masked (****).
const KIND_LABEL = { http: 'HTTP', amqp: 'AMQP', nats: 'NATS' };
const KIND_TITLE = {
  http: 'POSTed to an HTTP receiver',
  amqp: 'published to a RabbitMQ (AMQP 0-9-1) exchange, confirmed by the broker',
  nats: 'published to a NATS JetStream subject, acknowledged by its stream',
};

function card(ctx, e) {
  const health = e.health || {};
  const extra = h('div', { class: 'card-extra' });
  const notice = h('div', { class: 'card-notice' });
  const toggle = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'endpoint-toggle',
    onclick: async () => {
      toggle.disabled = true;
      try {
        await request('PATCH', adminPath('webhook-endpoints', e.id), { body: { enabled: !e.enabled } });
      } catch (err) {
        toggle.disabled = false;
        if (ctx.alive()) replace(notice, errorBox(err));
        return;
      }
      if (ctx.alive()) ctx.reload();
    },
  }, e.enabled ? 'Disable' : 'Enable');
  // Ordering per record is switched like enabled: one PATCH.
  const ordered = e.ordering === 'record';
  const ordering = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'endpoint-ordering-toggle',
    title: ordered ? 'Deliver every event as soon as it is dispatched' : "Deliver each record's events in the order of its versions",
    onclick: async () => {
      ordering.disabled = true;
      try {
        await request('PATCH', adminPath('webhook-endpoints', e.id), { body: { ordering: ordered ? 'none' : 'record' } });
      } catch (err) {
        ordering.disabled = false;
        if (ctx.alive()) replace(notice, errorBox(err));
        return;
      }
      if (ctx.alive()) ctx.reload();
    },
  }, ordered ? 'Unordered' : 'Order per record');
  const recover = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'endpoint-recover',
    onclick: () => {
      reveal.disabled = false;
      if (revealHeaders) revealHeaders.disabled = false;
      replace(extra, recoverForm(ctx, e, () => replace(extra)));
    },
  }, 'Recover…');
  const resync = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'endpoint-resync',
    onclick: () => {
      reveal.disabled = false;
      if (revealHeaders) revealHeaders.disabled = false;
      replace(extra, resyncForm(ctx, e, () => replace(extra)));
    },
  }, 'Resync…');
  const reveal = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'reveal-secret',
    onclick: () => {
      // The secret takes the place of revealed headers, if any.
      if (revealHeaders) revealHeaders.disabled = false;
      revealSecret(ctx, e, extra, reveal);
    },
  }, 'Reveal secret');
  const headerNames = Object.keys(e.headers || {}).sort();
  const revealHeaders = headerNames.length ? h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'reveal-headers',
    onclick: () => {
      reveal.disabled = false;
      revealCustomHeaders(ctx, e, extra, revealHeaders);
    },
  }, 'Reveal headers') : null;
  const editFilter = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'endpoint-edit-filter',
    onclick: () => {
      reveal.disabled = false;
      if (revealHeaders) revealHeaders.disabled = false;
      replace(extra, filterForm(ctx, e, () => replace(extra)));
    },
  }, 'Filter…');
  const editThrottle = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'endpoint-edit-throttle',
    onclick: () => {
      reveal.disabled = false;
      if (revealHeaders) revealHeaders.disabled = false;
      replace(extra, throttleForm(ctx, e, () => replace(extra)));
    },
  }, 'Throttle…');

  const detail = [];
  if (health.consecutive_failures > 0) detail.push(`${health.consecutive_failures} failed in a row`);
  if (health.disabled_reason) detail.push(`disabled: ${health.disabled_reason}`);
  if (health.last_failure_at) detail.push(`last failure ${fmtTime(health.last_failure_at)}`);
  if (health.last_success_at) detail.push(`last success ${fmtTime(health.last_success_at)}`);

  return h('section', { class: 'card', 'data-testid': 'endpoint', 'data-endpoint-id': e.id },
    h('div', { class: 'card-head' },
      h('h2', { class: 'url', 'data-testid': 'endpoint-url' }, e.url),
      badge(KIND_LABEL[e.kind] || e.kind || 'HTTP', 'muted', { 'data-testid': 'endpoint-kind', 'data-kind': e.kind || 'http', title: KIND_TITLE[e.kind] || '' }),
      badge(health.state || 'unknown', HEALTH_KIND[health.state] || 'muted', { 'data-testid': 'endpoint-health', 'data-state': health.state || '' })),
    e.description ? h('p', { class: 'desc', 'data-testid': 'endpoint-description' }, e.description) : null,
    h('p', { class: 'meta' },
      h('code', { class: 'id', 'data-testid': 'endpoint-id' }, e.id), ' · ',
      h('span', { 'data-testid': 'endpoint-events' }, (e.events || []).map((ev) => h('span', { class: 'chip' }, ev))),
      ' · ', modules(e),
      ' · ', `up to ${e.retry_max} attempt${e.retry_max === 1 ? '' : 's'} a delivery`,
      ' · ', h('span', { 'data-testid': 'endpoint-ordering', 'data-ordering': e.ordering || 'none' },
        ordered ? "each record's events in version order" : 'unordered'),
      ' · ', h('span', {
        'data-testid': 'endpoint-throttle',
        'data-rate-limit': e.rate_limit ? e.rate_limit.per_second : '', 'data-max-in-flight': e.max_in_flight ?? '',
      }, throttleText(e))),
    headerNames.length ? customHeaders(headerNames) : null,
    credentialsLine(e),
    filterLine(e),
    h('p', { class: 'health-detail muted', 'data-testid': 'endpoint-health-detail' }, detail.length ? detail.join(' · ') : 'no failures'),
    stats(e.stats),
    h('div', { class: 'actions' },
      toggle,
      link(`#/deliveries?endpoint_id=${encodeURIComponent(e.id)}`, 'Deliveries', { class: 'button secondary', 'data-testid': 'endpoint-deliveries' }),
      recover,
      editFilter,
      editThrottle,
      ordering,
      resync,
      reveal,
      revealHeaders),
    notice,
    extra);
}

// modules shows the modules an endpoint hears by name, slug beside; a
// module deleted since by its id.
function modules(e) {
  const ids = e.module_ids || [];
  if (ids.length === 0) return h('span', { 'data-testid': 'endpoint-modules' }, 'all modules');
  const named = new Map((e.modules || []).map((m) => [m.id, m]));
  const list = [];
  ids.forEach((id, i) => {
    if (i > 0) list.push(', ');
    list.push(moduleName(named.get(id) || { id }, 'endpoint-module'));
  });
  return h('span', { 'data-testid': 'endpoint-modules' }, ids.length === 1 ? 'module ' : 'modules ', list);
}

// credentialsLine shows the endpoint's OAuth2 client and TLS material as
// the API answers them: secrets masked (the page never has them), each
// certificate by subject and expiry; nothing without either.
function credentialsLine(e) {
  const parts = [];
  if (e.auth) {
    parts.push(h('span', { class: 'chip', 'data-testid': 'endpoint-auth', 'data-client-id': e.auth.client_id },
      'OAuth2 client ', h('code', null, e.auth.client_id), ` at ${e.auth.token_url}, secret ${MASK}`));
  }
  if (e.tls && e.tls.client_certificate) {
    const c = e.tls.client_certificate;
    const expired = Date.parse(c.not_after) < Date.now();
    parts.push(h('span', { class: 'chip', 'data-testid': 'endpoint-client-certificate', 'data-not-after': c.not_after },
      `client certificate ${c.subject}, key ${MASK}, ${expired ? 'expired' : 'expires'} `, time(c.not_after)));
  }
  if (e.tls && (e.tls.ca_certificates || []).length) {
    const n = e.tls.ca_certificates.length;
    parts.push(h('span', { class: 'chip', 'data-testid': 'endpoint-ca-certificates' }, `receiver verified by ${n} CA certificate${n === 1 ? '' : 's'}`));
  }
  if (!parts.length) return null;
  const list = [];
  parts.forEach((p, i) => { if (i > 0) list.push(' '); list.push(p); });
  return h('p', { class: 'meta', 'data-testid': 'endpoint-credentials' }, 'credentials ', list);
}

// filterLine shows the endpoint's content filter, its conditions as
// field = value chips; nothing without one.
function filterLine(e) {
  const conds = Object.entries(e.filter || {});
  if (conds.length === 0) return null;
  return h('p', { class: 'meta', 'data-testid': 'endpoint-filter' }, 'only records with ',
    conds.map(([k, v]) => h('span', { class: 'chip', 'data-testid': 'endpoint-filter-condition' }, `${k} = ${JSON.stringify(v)}`)));
}

// filterForm edits the endpoint's content filter as JSON: {"field":
// value, …}, every condition holding; empty or {} removes it. The
// service checks it against the endpoint's modules (422 naming the field).
// throttleText says an endpoint's throttle in words.
function throttleText(e) {
  const parts = [];
  if (e.rate_limit) parts.push(`at most ${e.rate_limit.per_second}/s`);
  if (e.max_in_flight != null) parts.push(`at most ${e.max_in_flight} at once`);
  return parts.length ? parts.join(', ') : 'not throttled';
}

// throttleForm edits rate_limit and max_in_flight; an empty field is no
// limit (null).
function throttleForm(ctx, e, close) {
  const rate = h('input', { type: 'number', min: 1, max: 10000, name: 'rate_limit', 'data-testid': 'throttle-rate' });
  rate.value = e.rate_limit ? String(e.rate_limit.per_second) : '';
  const inFlight = h('input', { type: 'number', min: 1, max: 1000, name: 'max_in_flight', 'data-testid': 'throttle-in-flight' });
  inFlight.value = e.max_in_flight != null ? String(e.max_in_flight) : '';
  const submit = h('button', { type: 'submit', 'data-testid': 'throttle-submit' }, 'Save throttle');
  const out = h('div');
  const form = h('form', { class: 'filter', 'data-testid': 'throttle-form', novalidate: true },
    h('p', null, 'Send this endpoint at most so many requests a second, and at once, across every worker (empty: no limit).'),
    h('label', null, 'Requests per second ', rate),
    h('label', null, ' In flight at once ', inFlight),
    h('div', { class: 'actions' }, submit, h('button', { type: 'button', class: 'secondary', onclick: close }, 'Close')),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const num = (input) => (input.value.trim() === '' ? null : Number(input.value));
    const r = num(rate);
    const body = { rate_limit: r === null ? null : { per_second: r }, max_in_flight: num(inFlight) };
    submit.disabled = true;
    try {
      await request('PATCH', adminPath('webhook-endpoints', e.id), { body });
    } catch (failure) {
      submit.disabled = false;
      if (ctx.alive()) replace(out, errorBox(failure, 'throttle-refused'));
      return;
    }
    if (ctx.alive()) ctx.reload();
  });
  return form;
}

function filterForm(ctx, e, close) {
  const text = h('textarea', {
    name: 'filter', rows: 3, cols: 60, spellcheck: 'false', 'data-testid': 'filter-input',
    placeholder: '{"status": "shipped"}',
  });
  text.value = Object.keys(e.filter || {}).length ? JSON.stringify(e.filter) : '';
  const err = h('span', { class: 'field-error', 'data-testid': 'filter-error' });
  const submit = h('button', { type: 'submit', 'data-testid': 'filter-submit' }, 'Save filter');
  const out = h('div');
  const form = h('form', { class: 'filter', 'data-testid': 'filter-form', novalidate: true },
    h('p', null, 'Deliver only events whose record has these field values (a JSON object; empty for every event). ',
      (e.module_ids || []).length ? '' : 'A filter needs the endpoint to name its modules.'),
    h('label', null, 'Filter ', text, err),
    h('div', { class: 'actions' }, submit, h('button', { type: 'button', class: 'secondary', onclick: close }, 'Close')),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    let filter = {};
    if (text.value.trim() !== '') {
      try {
        filter = JSON.parse(text.value);
      } catch {
        err.textContent = 'is not JSON';
        return;
      }
    }
    if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
      err.textContent = 'must be a JSON object';
      return;
    }
    submit.disabled = true;
    try {
      await request('PATCH', adminPath('webhook-endpoints', e.id), { body: { filter } });
    } catch (failure) {
      submit.disabled = false;
      if (ctx.alive()) replace(out, errorBox(failure, 'filter-refused'));
      return;
    }
    if (ctx.alive()) ctx.reload();
  });
  queueMicrotask(() => text.focus());
  return form;
}

function stats(s) {
  if (!s) return h('p', { class: 'muted' }, 'No statistics.');
  const item = (label, value, testid) => h('div', null, h('dt', null, label), h('dd', { 'data-testid': testid }, value));
  return h('div', { class: 'stats', 'data-testid': 'endpoint-stats' },
    h('dl', { class: 'figures' },
      item('success 24 h', fmtRate(s.success_rate), 'endpoint-success-rate'),
      item('attempts', `${s.succeeded} / ${s.attempts} ok`, 'endpoint-attempts'),
      item('p50', fmtMs(s.p50_ms), 'endpoint-p50'),
      item('p95', fmtMs(s.p95_ms), 'endpoint-p95')),
    h('figure', { class: 'chart' }, hourlyChart(s.hours || []),
      h('figcaption', { class: 'muted small' }, h('span', null, '24 h ago'), h('span', null, 'attempts per hour, failed in red'), h('span', null, 'now'))));
}

const BAR = 10;
const GAP = 2;
const HEIGHT = 40;

// hourlyChart draws one bar per hour, its height the hour's attempts
// (against the busiest hour), the failed share stacked on top in red.
function hourlyChart(hours) {
  const max = Math.max(1, ...hours.map((x) => x.attempts || 0));
  const width = hours.length * (BAR + GAP);
  const chart = svg('svg', {
    class: 'hours', width, height: HEIGHT + 1, viewBox: `0 0 ${width} ${HEIGHT + 1}`,
    role: 'img', 'aria-label': 'attempts per hour over the last 24 hours', 'data-testid': 'endpoint-chart',
  });
  hours.forEach((hr, i) => {
    const attempts = hr.attempts || 0;
    const failed = Math.max(0, attempts - (hr.succeeded || 0));
    const x = i * (BAR + GAP);
    const total = attempts ? Math.max(2, Math.round((attempts / max) * HEIGHT)) : 0;
    const failH = attempts ? Math.round((failed / attempts) * total) : 0;
    const g = svg('g', { 'data-testid': 'chart-hour', 'data-attempts': attempts, 'data-failed': failed },
      svg('title', null, `${fmtTime(hr.start)}: ${attempts} attempts, ${failed} failed, p50 ${fmtMs(hr.p50_ms)}, p95 ${fmtMs(hr.p95_ms)}`),
      svg('rect', { class: 'slot', x, y: 0, width: BAR, height: HEIGHT }));
    if (total - failH > 0) g.append(svg('rect', { class: 'ok', x, y: HEIGHT - total + failH, width: BAR, height: total - failH }));
    if (failH > 0) g.append(svg('rect', { class: 'fail', x, y: HEIGHT - total, width: BAR, height: failH }));
    chart.append(g);
  });
  chart.append(svg('line', { class: 'axis', x1: 0, x2: width, y1: HEIGHT + 0.5, y2: HEIGHT + 0.5 }));
  return chart;
}

// recoverForm starts a recovery of the endpoint's failed deliveries in a
// time window and follows its progress until it is no longer running.
function recoverForm(ctx, e, close) {
  const since = h('input', { type: 'datetime-local', step: 1, name: 'since', required: true, 'data-testid': 'recover-since' });
  const until = h('input', { type: 'datetime-local', step: 1, name: 'until', 'data-testid': 'recover-until' });
  const sinceErr = h('span', { class: 'field-error', 'data-testid': 'recover-since-error' });
  const untilErr = h('span', { class: 'field-error', 'data-testid': 'recover-until-error' });
  const submit = h('button', { type: 'submit', 'data-testid': 'recover-submit' }, 'Start recovery');
  const out = h('div', { class: 'recover-out' });
  const form = h('form', { class: 'recover', 'data-testid': 'recover-form', novalidate: true },
    h('p', null, `Replay every event this endpoint failed to receive in a time window (your local time, ${zoneName()}).`),
    h('div', { class: 'fields' },
      h('label', null, 'Since', since, sinceErr),
      h('label', null, 'Until (optional, default now)', until, untilErr)),
    h('div', { class: 'actions' }, submit, h('button', { type: 'button', class: 'secondary', onclick: close }, 'Close')),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    sinceErr.textContent = '';
    untilErr.textContent = '';
    const body = { since: fromLocalInput(since.value) };
    const u = fromLocalInput(until.value);
    if (!body.since) sinceErr.textContent = body.since === null ? 'is not a date and time' : 'is required';
    if (u === null) untilErr.textContent = 'is not a date and time';
    if (!body.since || u === null) return;
    if (u) body.until = u;
    submit.disabled = true;
    replace(out, h('p', { class: 'loading', role: 'status' }, 'Starting…'));
    let started;
    try {
      started = await request('POST', adminPath('webhook-endpoints', e.id, 'recover'), { body });
    } catch (err) {
      submit.disabled = false;
      if (!ctx.alive()) return;
      for (const d of err.details) {
        if (d.field === 'since') sinceErr.textContent = d.message;
        if (d.field === 'until') untilErr.textContent = d.message;
      }
      replace(out, errorBox(err, 'recover-error'));
      return;
    }
    const progress = h('div', { class: 'progress', 'data-testid': 'recovery-progress', 'data-status': 'running', role: 'status' });
    replace(out,
      h('p', { class: 'muted small' }, 'recovery ', h('code', { 'data-testid': 'recovery-id' }, started.recovery_id),
        ' · workflow ', h('code', null, started.workflow_id)),
      progress);
    follow(ctx, e.id, started.recovery_id, progress, () => { submit.disabled = false; });
  });
  queueMicrotask(() => since.focus());
  return form;
}

// follow polls the recovery about once a second while it runs and the
// panel is still shown.
async function follow(ctx, endpointID, recoveryID, el, done) {
  for (;;) {
    let rec;
    try {
      rec = await request('GET', adminPath('webhook-endpoints', endpointID, 'recoveries', recoveryID));
    } catch (err) {
      if (ctx.alive()) replace(el, errorBox(err, 'recovery-error'));
      done();
      return;
    }
    if (!ctx.alive() || !el.isConnected) return;
    const kind = rec.status === 'completed' ? 'ok' : rec.status === 'running' ? 'warn' : 'fail';
    el.dataset.status = rec.status;
    replace(el,
      badge(rec.status, kind, { 'data-testid': 'recovery-status' }), ' ',
      h('span', { 'data-testid': 'recovery-found', 'data-value': rec.found }, `found ${rec.found}`), ' · ',
      h('span', { 'data-testid': 'recovery-replayed', 'data-value': rec.replayed }, `replayed ${rec.replayed}`), ' · ',
      h('span', { 'data-testid': 'recovery-failed', 'data-value': rec.failed }, `failed ${rec.failed}`),
      ' · window ', time(rec.since), ' – ', time(rec.until),
      // A recovery stops at its cap (10,000 events) with events left: the
      // next one continues from next_since, with the same until.
      rec.capped && rec.next_since ? h('div', { class: 'banner warn', 'data-testid': 'recovery-capped', 'data-next-since': rec.next_since },
        'Capped: events of this window are left. Recover again from ', time(rec.next_since), ' to ', time(rec.until), ' to continue.') : null,
      rec.error ? h('div', { class: 'error' }, rec.error) : null);
    if (rec.status !== 'running') {
      done();
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// revealSecret fetches the signing secret only on this explicit click, and
// Hide takes it out of the page again.
async function revealSecret(ctx, e, extra, button) {
  button.disabled = true;
  let res;
  try {
    res = await request('GET', adminPath('webhook-endpoints', e.id, 'secret'));
  } catch (err) {
    button.disabled = false;
    if (ctx.alive()) replace(extra, errorBox(err));
    return;
  }
  if (!ctx.alive()) return;
  const field = h('input', { type: 'text', readonly: true, class: 'secret', 'aria-label': 'signing secret', 'data-testid': 'endpoint-secret', value: res.secret });
  const hide = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'hide-secret',
    onclick: () => {
      field.value = '';
      replace(extra);
      button.disabled = false;
    },
  }, 'Hide');
  replace(extra, h('div', { class: 'secret-box', 'data-testid': 'secret-box' },
    h('label', null, 'Signing secret ', field), hide));
  field.select();
}

// MASK stands for a custom header's value: answers carry names only.
const MASK = '••••••';

// customHeaders names the endpoint's custom headers, their values masked.
function customHeaders(names) {
  const list = [];
  names.forEach((n, i) => {
    if (i > 0) list.push(' ');
    list.push(h('span', { class: 'chip', 'data-testid': 'endpoint-header', 'data-name': n }, h('code', null, n), `: ${MASK}`));
  });
  return h('p', { class: 'meta', 'data-testid': 'endpoint-headers' }, 'custom headers ', list);
}

// revealCustomHeaders fetches the custom headers' values only on this
// explicit click, as revealSecret the secret; Hide takes them out of the
// page again.
async function revealCustomHeaders(ctx, e, extra, button) {
  button.disabled = true;
  let res;
  try {
    res = await request('GET', adminPath('webhook-endpoints', e.id, 'headers'));
  } catch (err) {
    button.disabled = false;
    if (ctx.alive()) replace(extra, errorBox(err));
    return;
  }
  if (!ctx.alive()) return;
  const headers = res.headers || {};
  const names = Object.keys(headers).sort();
  const table = h('table', { class: 'headers', 'data-testid': 'endpoint-headers-revealed' },
    h('tbody', null, names.map((n) => h('tr', null, h('th', null, n),
      h('td', null, h('input', { type: 'text', readonly: true, class: 'secret', 'aria-label': `value of ${n}`, 'data-testid': 'endpoint-header-value', 'data-name': n, value: headers[n] }))))));
  const hide = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'hide-headers',
    onclick: () => {
      replace(extra);
      button.disabled = false;
    },
  }, 'Hide');
  replace(extra, h('div', { class: 'secret-box', 'data-testid': 'headers-box' },
    h('div', null, h('label', null, 'Custom headers'), table), hide));
}
