// resyncForm starts a resync of an endpoint: every current record of its
// modules sent as a record_snapshot event as of one outbox position, its
// live events carrying on from there. It follows the resync's progress
// until it is no longer running.

import { h, replace, badge, time } from './dom.js';
import { request, adminPath } from './api.js';
import { errorBox } from './panel.js';

export function resyncForm(ctx, e, close) {
  const takes = (e.events || []).includes('record_snapshot');
  const submit = h('button', { type: 'submit', 'data-testid': 'resync-submit', disabled: !takes }, 'Start resync');
  const out = h('div', { class: 'resync-out' });
  const form = h('form', { class: 'resync', 'data-testid': 'resync-form' },
    h('p', null, 'Send this endpoint every current record of its modules as a record_snapshot event, ',
      'as of this moment; its live events carry on from exactly there.'),
    takes ? null : h('p', { class: 'error', 'data-testid': 'resync-not-subscribed' },
      'This endpoint does not take record_snapshot events: add it to its events first.'),
    h('div', { class: 'actions' }, submit, h('button', { type: 'button', class: 'secondary', onclick: close }, 'Close')),
    out);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    submit.disabled = true;
    replace(out, h('p', { class: 'loading', role: 'status' }, 'Starting…'));
    let rs;
    try {
      rs = await request('POST', adminPath('webhook-endpoints', e.id, 'resync'), { body: {} });
    } catch (err) {
      submit.disabled = false;
      if (ctx.alive()) replace(out, errorBox(err, 'resync-error'));
      return;
    }
    const progress = h('div', { class: 'progress', 'data-testid': 'resync-progress', 'data-status': 'running', role: 'status' });
    replace(out,
      h('p', { class: 'muted small' }, 'resync ', h('code', { 'data-testid': 'resync-id' }, rs.id),
        ' · workflow ', h('code', null, rs.workflow_id), ' · outbox position ', h('code', null, rs.position)),
      progress);
    follow(ctx, e.id, rs.id, progress, () => { submit.disabled = false; });
  });
  return form;
}

// follow polls the resync about once a second while it runs and the panel
// is still shown.
async function follow(ctx, endpointID, resyncID, el, done) {
  for (;;) {
    let rs;
    try {
      rs = await request('GET', adminPath('webhook-endpoints', endpointID, 'resyncs', resyncID));
    } catch (err) {
      if (ctx.alive()) replace(el, errorBox(err, 'resync-error'));
      done();
      return;
    }
    if (!ctx.alive() || !el.isConnected) return;
    const kind = rs.status === 'completed' ? 'ok' : rs.status === 'running' ? 'warn' : 'fail';
    el.dataset.status = rs.status;
    const bar = h('progress', { max: Math.max(rs.total, rs.examined, 1), 'data-testid': 'resync-bar' });
    bar.value = rs.examined;
    replace(el,
      badge(rs.status, kind, { 'data-testid': 'resync-status' }), ' ', bar, ' ',
      h('span', { 'data-testid': 'resync-examined', 'data-value': rs.examined }, `${rs.examined} of ${rs.total} records`), ' · ',
      h('span', { 'data-testid': 'resync-sent', 'data-value': rs.sent }, `sent ${rs.sent}`), ' · ',
      h('span', { 'data-testid': 'resync-covered', 'data-value': rs.covered }, `${rs.covered} left to live events`),
      ' · started ', time(rs.started_at),
      rs.error ? h('div', { class: 'error' }, rs.error) : null);
    if (rs.status !== 'running') {
      done();
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}
