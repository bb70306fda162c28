// The inbound panel: a module picker, then the calls a module's inbound
// webhook received with their outcomes, and a replay of those the API
// replays (replayable).

import { h, replace, link, badge, time, moduleName } from './dom.js';
import { request, adminPath, withQuery } from './api.js';
import { header, loading, errorBox, refreshButton, bodyView } from './panel.js';
import { pageOf, setPage, pager } from './pager.js';

const PAGE_SIZE = 50;

export function inboundPanel(ctx, params) {
  const module = params.get('module');
  if (module) return eventsPanel(ctx, module, pageOf(params));
  return modulesPanel(ctx);
}

async function modulesPanel(ctx) {
  const body = h('div', null, loading('modules'));
  replace(ctx.main, header('Inbound webhooks', refreshButton(ctx.reload, 'inbound-refresh')),
    h('p', { class: 'muted' }, 'Pick a module to see the calls its inbound webhook received.'), body);
  let res;
  try {
    res = await request('GET', '/api/admin/modules');
  } catch (err) {
    if (ctx.alive()) replace(body, errorBox(err));
    return;
  }
  if (!ctx.alive()) return;
  const mods = res.data || [];
  if (mods.length === 0) {
    replace(body, h('p', { class: 'empty' }, 'No modules yet.'));
    return;
  }
  replace(body, h('table', { class: 'list', 'data-testid': 'modules-table' },
    h('thead', null, h('tr', null, ['Module', 'Slug', 'Id', ''].map((t) => h('th', null, t)))),
    h('tbody', null, mods.map((m) => h('tr', { 'data-testid': 'module-row', 'data-module-id': m.id },
      h('td', { 'data-testid': 'module-name' }, m.name),
      h('td', { class: 'mono' }, m.slug),
      h('td', { class: 'mono small id' }, m.id),
      h('td', null, link(`#/inbound?module=${encodeURIComponent(m.id)}`, 'Inbound calls', { 'data-testid': 'module-inbound-link' })))))));
}

async function eventsPanel(ctx, moduleID, page) {
  const body = h('div', null, loading('inbound calls'));
  // The module is shown by its id until the answer names it.
  const module = h('span', { 'data-testid': 'inbound-module' }, h('code', { class: 'id' }, moduleID));
  replace(ctx.main,
    header('Inbound calls', link('#/inbound', '← Modules', { class: 'button secondary', 'data-testid': 'inbound-modules' }),
      refreshButton(ctx.reload, 'inbound-refresh')),
    h('p', { class: 'muted' }, 'Module ', module, ', newest first.'),
    body);
  let res;
  try {
    res = await request('GET', withQuery(adminPath('modules', moduleID, 'inbound-events'), { limit: PAGE_SIZE, cursor: page.cursor }));
  } catch (err) {
    if (ctx.alive()) replace(body, errorBox(err));
    return;
  }
  if (!ctx.alive()) return;
  if (res.module) replace(module, moduleName(res.module, 'inbound-module-name'));
  const evs = res.data || [];
  const hashOf = (p) => `#/inbound?${setPage(new URLSearchParams({ module: moduleID }), p)}`;
  replace(body,
    evs.length
      ? h('table', { class: 'list', 'data-testid': 'inbound-table' },
        h('thead', null, h('tr', null, ['Received', 'Status', 'Action', 'Record', 'Error', 'Marks', 'Body', ''].map((t) => h('th', null, t)))),
        h('tbody', null, evs.map((ev) => eventRow(ctx, moduleID, ev))))
      : h('p', { class: 'empty', 'data-testid': 'inbound-empty' }, 'No calls received.'),
    pager({ page, res, size: PAGE_SIZE, noun: 'call', hashOf, ids: { prev: 'inbound-prev', info: 'inbound-page-info', next: 'inbound-next' } }));
}

function statusBadge(code, testid) {
  return badge(String(code), code >= 200 && code < 300 ? 'ok' : 'fail', { 'data-testid': testid, 'data-status': code });
}

// replayCell offers Replay where the API would replay the call; elsewhere
// (a call refused before its body was read or its signature checked, a 401
// say) it says why not, instead of a button the API answers 409.
function replayCell(ctx, moduleID, ev) {
  if (!ev.replayable) {
    return h('span', { class: 'muted small prose', 'data-testid': 'inbound-not-replayable',
      title: 'Only a call whose whole body was read and whose signature passed can be replayed.' }, 'not replayable');
  }
  const result = h('div', { class: 'small', 'data-testid': 'inbound-replay-result' });
  const replay = h('button', {
    type: 'button', class: 'secondary', 'data-testid': 'inbound-replay',
    onclick: async () => {
      replay.disabled = true;
      replace(result, h('span', { class: 'loading' }, 'Replaying…'));
      let out;
      try {
        out = await request('POST', adminPath('modules', moduleID, 'inbound-events', ev.id, 'replay'));
      } catch (err) {
        replay.disabled = false;
        if (!ctx.alive()) return;
        result.dataset.outcome = 'error';
        replace(result, errorBox(err, 'inbound-replay-error'));
        return;
      }
      replay.disabled = false;
      if (!ctx.alive()) return;
      result.dataset.outcome = 'ok';
      replace(result, h('span', { class: 'ok-text' }, 'Replayed: ', statusBadge(out.status, 'inbound-replay-status'), ' ',
        out.action || '', out.record_id ? ` record ${out.record_id}` : '', ` (call ${out.id})`));
    },
  }, 'Replay');
  return [replay, result];
}

function eventRow(ctx, moduleID, ev) {
  const marks = [];
  if (ev.duplicate_of) marks.push(h('div', { 'data-testid': 'inbound-marker', 'data-mark': 'duplicate' }, 'duplicate of ', h('code', { class: 'id' }, ev.duplicate_of)));
  if (ev.replay_of) marks.push(h('div', { 'data-testid': 'inbound-marker', 'data-mark': 'replay' }, 'replay of ', h('code', { class: 'id' }, ev.replay_of)));
  if (ev.body_truncated) marks.push(h('div', { 'data-testid': 'inbound-marker', 'data-mark': 'truncated' }, `body truncated (${ev.body_size} bytes)`));
  return h('tr', { 'data-testid': 'inbound-row', 'data-event-id': ev.id, 'data-replayable': String(!!ev.replayable) },
    h('td', null, time(ev.received_at), h('div', { class: 'muted small mono' }, ev.ip || '')),
    h('td', null, statusBadge(ev.status, 'inbound-status')),
    h('td', { 'data-testid': 'inbound-action' }, ev.action || '—'),
    h('td', { class: 'small' }, ev.record_id
      ? link(`#/deliveries?record_id=${encodeURIComponent(ev.record_id)}`, ev.record_id, { class: 'mono id', title: 'the webhook deliveries of this record' })
      : '—'),
    h('td', { class: 'prose', 'data-testid': 'inbound-error' }, ev.error
      ? [h('code', null, ev.error.code), ' ', ev.error.message,
        (ev.error.details || []).length ? h('ul', { class: 'details' }, ev.error.details.map((d) => h('li', null, h('code', null, d.field), ' ', d.message))) : null]
      : '—'),
    h('td', null, marks.length ? marks : '—'),
    h('td', null, h('details', { 'data-testid': 'inbound-body' }, h('summary', { 'data-testid': 'inbound-body-toggle' }, `${ev.body_size} bytes`), bodyView(ev.body, 'inbound-body-text'))),
    h('td', null, replayCell(ctx, moduleID, ev)));
}
