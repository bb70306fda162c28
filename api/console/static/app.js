// The recordhub support console: sign-in, the top navigation and the hash
// router. Each panel makes at most one API call when it loads.

import { h, replace, link } from './dom.js';
import { session, request, onUnauthorized } from './api.js';
import { errorBox } from './panel.js';
import { endpointsPanel } from './endpoints.js';
import { deliveriesPanel, attemptPanel } from './deliveries.js';
import { inboundPanel } from './inbound.js';

function meta(name) {
  const el = document.querySelector(`meta[name="${name}"]`);
  return el ? el.getAttribute('content') || '' : '';
}

const config = {
  temporalUI: meta('recordhub-temporal-ui').replace(/\/+$/, ''),
  namespace: meta('recordhub-temporal-namespace') || 'default',
};

const root = document.getElementById('app') || document.body.appendChild(h('div', { id: 'app' }));

// generation counts renders: a panel whose answer arrives after the user
// moved on sees alive() false and draws nothing.
let generation = 0;
// signInError is shown on the sign-in form: a refused key, or the 401
// that ended the session.
let signInError = null;

const routes = [
  { name: 'endpoints', match: /^\/endpoints$/, panel: endpointsPanel },
  { name: 'deliveries', match: /^\/deliveries$/, panel: deliveriesPanel },
  { name: 'deliveries', match: /^\/deliveries\/([^/]+)$/, panel: attemptPanel },
  { name: 'inbound', match: /^\/inbound$/, panel: inboundPanel },
];

// parseHash splits '#/deliveries?endpoint_id=x' into path and parameters.
function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/endpoints';
  const i = raw.indexOf('?');
  const path = i < 0 ? raw : raw.slice(0, i);
  const params = new URLSearchParams(i < 0 ? '' : raw.slice(i + 1));
  return { path, params };
}

function navigate(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

function render() {
  const gen = ++generation;
  if (!session.get()) {
    renderSignIn();
    return;
  }
  const { path, params } = parseHash();
  let route = null;
  let args = [];
  for (const r of routes) {
    const m = path.match(r.match);
    if (m) {
      route = r;
      args = m.slice(1).map((s) => {
        try {
          return decodeURIComponent(s);
        } catch {
          return s;
        }
      });
      break;
    }
  }
  const main = h('main', { class: 'panel', 'data-testid': 'panel', 'data-route': route ? route.name : 'none' });
  replace(root, nav(route ? route.name : ''), main);
  const ctx = {
    main,
    config,
    alive: () => gen === generation,
    navigate,
    reload: render,
  };
  if (!route) {
    main.append(h('p', null, 'There is no such page. ', link('#/endpoints', 'Go to the endpoints.')));
    return;
  }
  route.panel(ctx, params, ...args);
}

function nav(active) {
  const item = (name, text) => link(`#/${name}`, text, {
    class: name === active ? 'active' : null,
    'aria-current': name === active ? 'page' : null,
    'data-testid': `nav-${name}`,
  });
  return h('header', { class: 'top' },
    h('span', { class: 'brand' }, 'recordhub ', h('span', { class: 'muted' }, 'console')),
    h('nav', null, item('endpoints', 'Endpoints'), item('deliveries', 'Deliveries'), item('inbound', 'Inbound')),
    h('button', { type: 'button', class: 'secondary', 'data-testid': 'sign-out', onclick: signOut }, 'Sign out'));
}

function signOut() {
  session.clear();
  signInError = null;
  render();
}

function renderSignIn() {
  const input = h('input', {
    type: 'password', id: 'signin-key', name: 'key', autocomplete: 'off', spellcheck: 'false', required: true,
    placeholder: 'rh_…', 'data-testid': 'signin-key',
  });
  const message = h('div', { class: 'signin-message', 'aria-live': 'polite' },
    signInError ? errorBox(signInError, 'signin-error') : null);
  const submit = h('button', { type: 'submit', 'data-testid': 'signin-submit' }, 'Sign in');
  const form = h('form', { class: 'signin', 'data-testid': 'signin-form', novalidate: true },
    h('h1', null, 'recordhub console'),
    h('p', { class: 'muted' }, 'Sign in with an admin API key. It is kept in this tab only and forgotten when the tab closes.'),
    h('label', { for: 'signin-key' }, 'Admin key'),
    input,
    submit,
    message);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (!key) {
      replace(message, errorBox({ message: 'enter an admin key' }, 'signin-error'));
      return;
    }
    submit.disabled = true;
    replace(message, h('p', { class: 'loading', role: 'status' }, 'Checking the key…'));
    try {
      await request('GET', '/api/admin/webhook-endpoints?limit=1', { key });
    } catch (err) {
      submit.disabled = false;
      replace(message, errorBox(err, 'signin-error'));
      input.select();
      return;
    }
    input.value = '';
    session.set(key);
    signInError = null;
    render();
  });
  replace(root, h('main', { class: 'signin-page' }, form));
  input.focus();
}

onUnauthorized((err) => {
  session.clear();
  signInError = err;
  render();
});

window.addEventListener('hashchange', render);
render();
