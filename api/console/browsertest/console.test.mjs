// Browser test of the support console, driven by
// cmd/recordhub TestConsoleInBrowser against the real service. It drives
// headless Chromium through playwright-core and exits non-zero, naming the
// step, when anything is wrong: a step's check, a console error, an
// uncaught exception or a CSP violation.
//
// Environment: RECORDHUB_URL, RECORDHUB_ADMIN_KEY, RECEIVER_CONTROL_URL
// (POST ?mode=fail|succeed), RECORDHUB_ENDPOINT_ID, RECORDHUB_MODULE_ID
// (the endpoint's module, with a string field "title"),
// RECORDHUB_INBOUND_MODULE_ID (a module whose inbound webhook received a
// call), RECORDHUB_TEMPORAL_UI and RECORDHUB_TEMPORAL_NAMESPACE (what the
// page was configured with), and optionally CHROMIUM and SCREENSHOT.

import { chromium } from 'playwright-core';

function env(name, fallback) {
  const v = process.env[name] ?? fallback;
  if (v === undefined || v === '') {
    console.error(`console.test: ${name} is not set`);
    process.exit(2);
  }
  return v;
}

const BASE = env('RECORDHUB_URL').replace(/\/+$/, '');
const KEY = env('RECORDHUB_ADMIN_KEY');
const CONTROL = env('RECEIVER_CONTROL_URL');
const RECEIVER = new URL(CONTROL).origin;
const ENDPOINT_ID = env('RECORDHUB_ENDPOINT_ID');
const MODULE_ID = env('RECORDHUB_MODULE_ID');
const INBOUND_MODULE_ID = env('RECORDHUB_INBOUND_MODULE_ID');
const TEMPORAL_UI = env('RECORDHUB_TEMPORAL_UI');
const NAMESPACE = env('RECORDHUB_TEMPORAL_NAMESPACE', 'default');
const SCREENSHOT = process.env.SCREENSHOT || '';
const XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">';
// The browser runs in a zone away from UTC, with a half-hour offset, so
// that a time shown without its zone, or converted wrongly, is seen.
const TIMEZONE = 'Asia/Kolkata';
const ZONE = 'UTC+05:30';
const ZONE_MINUTES = 330;

class Failure extends Error {}

function check(cond, message) {
  if (!cond) throw new Failure(message);
}

// api calls the service from Node (setting up and reading state), never
// through the page.
async function api(method, path, body) {
  const res = await fetch(BASE + path, {
    method,
    headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Failure(`${method} ${path}: HTTP ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

async function receiver(mode) {
  const res = await fetch(`${CONTROL}?mode=${mode}`, { method: 'POST' });
  check(res.ok, `receiver control ${mode}: HTTP ${res.status}`);
}

function createRecord(title) {
  return api('POST', `/api/modules/${encodeURIComponent(MODULE_ID)}/records`, { fields: { title } });
}

// until polls cond (server state, read through the API) until it answers
// something truthy, for at most ms.
async function until(what, cond, ms = 30000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Failure(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

// shownTime is how the console must show an RFC 3339 time in TIMEZONE.
function shownTime(iso) {
  const d = new Date(Date.parse(iso) + ZONE_MINUTES * 60000);
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} ${ZONE}`;
}

// checkTimes checks every time the page shows in a <time> element: in the
// browser's zone, the zone written beside it.
async function checkTimes(page, what) {
  const times = await page.locator('main time').evaluateAll((els) => els.map((e) => [e.getAttribute('datetime'), e.textContent]));
  check(times.length > 0, `${what} shows no time`);
  for (const [iso, text] of times) {
    check(text === shownTime(iso), `${what} shows ${iso} as ${JSON.stringify(text)}, want ${JSON.stringify(shownTime(iso))}`);
  }
}

// wrapsBetweenWords checks that el's text wraps as prose: between words,
// never inside one (word-break normal, and no overflow-wrap anywhere).
async function wrapsBetweenWords(el, what) {
  const s = await el.evaluate((e) => {
    const cs = getComputedStyle(e);
    return { wordBreak: cs.wordBreak, overflowWrap: cs.overflowWrap };
  });
  check(s.wordBreak === 'normal' && s.overflowWrap !== 'anywhere',
    `${what} wraps with word-break ${s.wordBreak} and overflow-wrap ${s.overflowWrap}, want normal and not anywhere`);
}

function deliveries(params) {
  return api('GET', `/api/admin/webhook-deliveries?${new URLSearchParams({ limit: '100', ...params })}`);
}

// localInput formats a time as a datetime-local value in the browser's
// time zone (the page converts it back), in the browser's own form: the
// seconds only when they are not 0. Chromium drops ":00" from a value it
// is given, and Playwright's fill then fails the step as a malformed value
// (once a minute's worth of runs did).
function localInput(page, ms) {
  return page.evaluate((t) => {
    const d = new Date(t);
    const p = (n) => String(n).padStart(2, '0');
    const seconds = d.getSeconds() === 0 ? '' : `:${p(d.getSeconds())}`;
    return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}${seconds}`;
  }, ms);
}

const problems = [];
// allowed holds the HTTP statuses a step provokes on purpose: Chromium
// logs each failed fetch as a console error, which is expected then only.
const allowed = new Set();
const apiRequests = [];

async function expectingStatus(status, fn) {
  allowed.add(status);
  try {
    return await fn();
  } finally {
    allowed.delete(status);
  }
}

function watch(page) {
  page.on('console', (msg) => {
    if (msg.type() !== 'error') return;
    const m = /Failed to load resource: the server responded with a status of (\d+)/.exec(msg.text());
    if (m && allowed.has(Number(m[1]))) return;
    problems.push(`console error: ${msg.text()} (${msg.location().url || 'no url'})`);
  });
  page.on('pageerror', (err) => problems.push(`uncaught exception: ${err.message}`));
  page.on('request', (req) => {
    if (req.url().startsWith(`${BASE}/api/`)) apiRequests.push(req.url().slice(BASE.length));
  });
}

let stepNo = 0;
async function step(name, fn) {
  stepNo++;
  const start = Date.now();
  try {
    await fn();
  } catch (err) {
    const at = err instanceof Failure ? '' : (err.stack || '').split('\n').find((l) => l.includes('console.test.mjs')) || '';
    throw new Failure(`step ${stepNo} (${name}): ${err.message}${at ? `\n${at.trim()}` : ''}`);
  }
  check(problems.length === 0, `step ${stepNo} (${name}): ${problems.join('; ')}`);
  console.log(`ok   ${stepNo} ${name} (${Date.now() - start} ms)`);
}

// apiCallsDuring counts the API requests the page makes while fn runs.
async function apiCallsDuring(fn) {
  const before = apiRequests.length;
  await fn();
  return apiRequests.slice(before);
}

async function main() {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, timezoneId: TIMEZONE });
    await context.exposeBinding('__cspViolation', (_source, v) => problems.push(`CSP violation: ${v}`));
    await context.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (e) => {
        window.__cspViolation(`${e.violatedDirective} blocked ${e.blockedURI || 'inline'} (${e.sourceFile || ''}:${e.lineNumber || ''})`);
      });
    });
    const page = await context.newPage();
    page.setDefaultTimeout(20000);
    watch(page);
    try {
      await run(page);
    } catch (err) {
      // What the page showed when the step failed.
      const shown = await page.evaluate(() => document.body.innerText).catch(() => '(page unavailable)');
      err.message += `\npage ${page.url()} shows:\n${shown.slice(0, 3000)}`;
      throw err;
    }
  } finally {
    await browser.close();
  }
}

async function run(page) {
  const card = page.locator(`[data-testid="endpoint"][data-endpoint-id="${ENDPOINT_ID}"]`);

  await step('a wrong key shows the API\'s error', async () => {
    const res = await page.goto(`${BASE}/console/`);
    check(res.ok(), `GET /console/: HTTP ${res.status()}`);
    const csp = res.headers()['content-security-policy'] || '';
    check(csp.includes("script-src 'self'") && csp.includes("default-src 'none'"), `the page's CSP is ${JSON.stringify(csp)}`);
    const wrong = `rh_wrong_${'x'.repeat(32)}`;
    const refused = await fetch(`${BASE}/api/admin/webhook-endpoints?limit=1`, { headers: { Authorization: `Bearer ${wrong}` } });
    const { message } = await refused.json();
    check(refused.status === 401 && message, `a wrong key answers ${refused.status} ${message}`);
    await expectingStatus(401, async () => {
      await page.getByTestId('signin-key').fill(wrong);
      await page.getByTestId('signin-submit').click();
      const err = page.getByTestId('signin-error');
      await err.waitFor({ state: 'visible' });
      const text = (await err.innerText()).trim();
      check(text.includes(message), `the sign-in error reads ${JSON.stringify(text)}, want the API's message ${JSON.stringify(message)}`);
      check(await err.getByTestId('request-id').isVisible(), 'the sign-in error shows no request id');
      check(await page.getByTestId('signin-form').isVisible(), 'the sign-in form is gone after a refused key');
    });
    check(await page.evaluate(() => sessionStorage.length) === 0, 'a refused key was kept in sessionStorage');
  });

  await step('sign in; the key is in sessionStorage only', async () => {
    await page.getByTestId('signin-key').fill(KEY);
    await page.getByTestId('signin-submit').click();
    await card.waitFor();
    const where = await page.evaluate((key) => ({
      session: Object.keys(sessionStorage).some((k) => sessionStorage.getItem(k) === key),
      local: localStorage.length,
      cookie: document.cookie,
      url: location.href.includes(key),
    }), KEY);
    check(where.session, 'the key is not in sessionStorage');
    check(where.local === 0, 'localStorage is not empty');
    check(where.cookie === '', `cookies are set: ${where.cookie}`);
    check(!where.url, 'the key is in the URL');
  });

  let failedID;
  await step('the endpoint turns failing after a record change', async () => {
    await createRecord('first');
    await until('the badge to read failing', async () => {
      const calls = await apiCallsDuring(async () => {
        await page.getByTestId('endpoints-refresh').click();
        await card.getByTestId('endpoint-health').waitFor();
      });
      check(calls.length === 1, `a refresh of the endpoints made ${calls.length} API calls: ${calls.join(', ')}`);
      return await card.getByTestId('endpoint-health').getAttribute('data-state') === 'failing';
    });
    check((await card.getByTestId('endpoint-health').innerText()).trim() === 'failing', 'the badge does not read failing');
    const detail = await card.getByTestId('endpoint-health-detail').innerText();
    check(detail.includes('1 failed in a row'), 'consecutive failures are not shown');
    check(new RegExp(`last failure \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d ${ZONE.replace('+', '\\+')}`).test(detail), `the last failure's time has no zone: ${detail}`);
    // The endpoint's module by its name and slug, not its id alone.
    const mod = card.getByTestId('endpoint-module');
    check(await mod.getAttribute('data-module-id') === MODULE_ID, 'the endpoint\'s module is not shown');
    const modText = (await mod.innerText()).trim();
    check(modText.startsWith('Notes') && modText.includes('notes') && !modText.includes(MODULE_ID), `the endpoint's module reads ${JSON.stringify(modText)}, want its name and slug`);
    check((await card.getByTestId('endpoint-success-rate').innerText()).trim() === '0 %', 'the success rate is not 0 %');
    const hours = await card.locator('[data-testid="endpoint-chart"] [data-testid="chart-hour"]').evaluateAll(
      (gs) => gs.map((g) => [Number(g.dataset.attempts), Number(g.dataset.failed)]));
    check(hours.length === 24, `the chart has ${hours.length} hours, want 24`);
    check(hours[23][0] >= 1 && hours[23][1] >= 1, `the chart's last hour is ${hours[23]}, want a failed attempt`);
    check(await card.locator('[data-testid="endpoint-chart"] rect.fail').count() >= 1, 'the chart shows no failed share');
  });

  await step('the failed attempt in the deliveries list and in full', async () => {
    await card.getByTestId('endpoint-deliveries').click();
    await page.waitForURL((u) => u.hash === `#/deliveries?endpoint_id=${encodeURIComponent(ENDPOINT_ID)}`);
    const row = page.locator('[data-testid="delivery-row"][data-status="failed"]').first();
    await row.waitFor();
    // Filters live in the hash: applied through the form, kept on reload.
    await page.getByTestId('filter-status').selectOption('false');
    await page.getByTestId('filter-apply').click();
    await page.waitForURL((u) => u.hash.includes('succeeded=false') && u.hash.includes(`endpoint_id=${ENDPOINT_ID}`));
    await page.reload();
    await row.waitFor();
    check(await page.getByTestId('filter-status').inputValue() === 'false', 'the status filter was lost on reload');
    check(await page.getByTestId('filter-endpoint').inputValue() === ENDPOINT_ID, 'the endpoint filter was lost on reload');
    check(await page.locator('[data-testid="delivery-row"][data-status="succeeded"]').count() === 0, 'the failed filter shows a succeeded row');
    failedID = await row.getAttribute('data-delivery-id');
    const full = await api('GET', `/api/admin/webhook-deliveries/${failedID}`);
    const want = `${TEMPORAL_UI}/namespaces/${encodeURIComponent(NAMESPACE)}/workflows/${encodeURIComponent(full.workflow_id)}/${encodeURIComponent(full.run_id)}/history`;
    check(await row.getByTestId('temporal-link').getAttribute('href') === want, `the row's Temporal link is not ${want}`);
    // The endpoint by its URL, the id beside it.
    const rowURL = (await row.getByTestId('delivery-endpoint-url').innerText()).trim();
    check(rowURL === `${RECEIVER}/hook`, `the row shows the endpoint as ${JSON.stringify(rowURL)}, want ${RECEIVER}/hook`);
    check((await row.innerText()).includes(ENDPOINT_ID), 'the row does not show the endpoint id');
    check(await row.getAttribute('data-record-id') === full.record_id && full.record_id, `the row's record is ${await row.getAttribute('data-record-id')}, want ${full.record_id}`);
    await checkTimes(page, 'the deliveries list');
    const since = (await page.getByTestId('deliveries-filters').innerText());
    check(since.includes(`Since (${ZONE})`) && since.includes(`Until (${ZONE})`), 'the time filters do not name their zone');

    const calls = await apiCallsDuring(async () => {
      await row.getByTestId('delivery-link').click();
      await page.getByTestId('attempt-response-status').waitFor();
    });
    check(calls.length === 1, `opening an attempt made ${calls.length} API calls`);
    check((await page.getByTestId('attempt-response-status').innerText()).trim() === '500', 'the attempt does not show status 500');
    check((await page.getByTestId('attempt-error').innerText()).includes('http_status'), 'the attempt does not show its error code');
    await wrapsBetweenWords(page.getByTestId('attempt-error'), 'the attempt\'s error message');
    const attemptURL = (await page.getByTestId('attempt-endpoint-url').innerText()).trim();
    check(attemptURL === `${RECEIVER}/hook`, `the attempt shows the endpoint as ${JSON.stringify(attemptURL)}`);
    check((await page.getByTestId('attempt-record-link').innerText()).trim() === full.record_id, 'the attempt does not show its record');
    await checkTimes(page, 'the attempt');
    const total = page.getByTestId('timing-total');
    check(/\d ms|\d s/.test(await total.innerText()), `the timing total reads ${await total.innerText()}`);
    check(Number(await total.getAttribute('data-ms')) > 0, 'the timing total is not positive');
    check(await page.locator('[data-testid="timing-bar"] rect.phase').count() >= 1, 'the timing bar has no segments');
    const link = page.locator('.attempt-head [data-testid="temporal-link"]');
    check(await link.getAttribute('href') === want, `the attempt's Temporal link is not ${want}`);
    check(await link.getAttribute('target') === '_blank' && await link.getAttribute('rel') === 'noopener noreferrer', 'the Temporal link is not a safe external link');
  });

  await step('replay the failed attempt; the new attempt appears', async () => {
    await receiver('succeed');
    await page.getByTestId('attempt-replay').click();
    await page.waitForURL((u) => u.hash.startsWith('#/deliveries?event_id='));
    await page.locator(`[data-testid="delivery-row"][data-replay-of="${failedID}"][data-status="succeeded"]`).waitFor();
    await page.locator('[data-testid="replay-banner"][data-state="arrived"]').waitFor();
  });

  await step('recover a window of failed deliveries', async () => {
    await receiver('fail');
    const since = Date.now() - 1500;
    const before = (await deliveries({ endpoint_id: ENDPOINT_ID, error: 'http_status' })).total;
    for (const t of ['second', 'third', 'fourth']) await createRecord(t);
    await until('three more failed deliveries', async () =>
      (await deliveries({ endpoint_id: ENDPOINT_ID, error: 'http_status' })).total >= before + 3);
    await receiver('succeed');

    await page.getByTestId('nav-endpoints').click();
    await card.getByTestId('endpoint-recover').click();
    // A window in the future is the API's 422, shown beside its field.
    await expectingStatus(422, async () => {
      await card.getByTestId('recover-since').fill(await localInput(page, Date.now() + 86400000));
      await card.getByTestId('recover-submit').click();
      await card.getByTestId('recover-error').waitFor();
      check((await card.getByTestId('recover-since-error').innerText()).trim() !== '', 'the 422 field error is not shown beside since');
    });
    await card.getByTestId('recover-since').fill(await localInput(page, since));
    await card.getByTestId('recover-submit').click();
    const progress = card.getByTestId('recovery-progress');
    await progress.waitFor();
    await card.locator('[data-testid="recovery-progress"]:not([data-status="running"])').waitFor({ timeout: 30000 });
    const status = await progress.getAttribute('data-status');
    const found = Number(await card.getByTestId('recovery-found').getAttribute('data-value'));
    const replayed = Number(await card.getByTestId('recovery-replayed').getAttribute('data-value'));
    check(status === 'completed', `the recovery ended ${status}`);
    check(found >= 1 && found === replayed, `the recovery found ${found} and replayed ${replayed}`);
    console.log(`     recovery found=${found} replayed=${replayed}`);
  });

  let seeding;
  await step('a record holding markup is shown as text', async () => {
    const seen = new Set((await deliveries({ endpoint_id: ENDPOINT_ID })).data.map((d) => d.event_id));
    await createRecord(XSS);
    const row = await until('the delivery of the record with markup', async () =>
      (await deliveries({ endpoint_id: ENDPOINT_ID })).data.find((d) => !seen.has(d.event_id) && d.finished_at));
    // Later steps need over 100 attempts (three pages): seed them while this runs.
    seeding = seed();
    await page.evaluate((id) => { location.hash = `#/deliveries/${encodeURIComponent(id)}`; }, row.id);
    const pre = page.getByTestId('request-body');
    await pre.waitFor();
    const text = await pre.textContent();
    check(text.includes('<script>window.__xss=1</script>') && text.includes('<img src=x onerror='), `the request body does not show the markup as text: ${text}`);
    const raw = await page.getByTestId('request-body-raw').textContent();
    check(raw.includes('window.__xss=1'), 'the exact body is not shown');
    const dom = await page.evaluate(() => ({
      xss: typeof window.__xss,
      scripts: [...document.scripts].map((s) => s.getAttribute('src')),
      imgs: document.querySelectorAll('img').length,
    }));
    check(dom.xss === 'undefined', `window.__xss is ${dom.xss}`);
    check(dom.scripts.length === 1 && dom.scripts[0] === '/console/app.js', `scripts in the page: ${JSON.stringify(dom.scripts)}`);
    check(dom.imgs === 0, `${dom.imgs} img elements in the page`);
  });

  await step('inbound calls and their replay', async () => {
    await page.getByTestId('nav-inbound').click();
    const modRow = page.locator(`[data-testid="module-row"][data-module-id="${INBOUND_MODULE_ID}"]`);
    check((await modRow.getByTestId('module-name').innerText()).trim() === 'Leads', 'the modules list does not name the module');
    await modRow.getByTestId('module-inbound-link').click();
    const row = page.getByTestId('inbound-row').first();
    await row.waitFor();
    const name = (await page.getByTestId('inbound-module-name').innerText()).trim();
    check(name.startsWith('Leads') && name.includes('leads') && !name.includes(INBOUND_MODULE_ID), `the inbound page names its module ${JSON.stringify(name)}`);
    await checkTimes(page, 'the inbound calls');
    // The call refused for its signature (401) cannot be replayed: no Replay.
    const refused = page.locator('[data-testid="inbound-row"]:has([data-testid="inbound-status"][data-status="401"])');
    check(await refused.count() === 1, `${await refused.count()} calls shown as 401, want 1`);
    check(await refused.getByTestId('inbound-replay').count() === 0, 'the 401 call offers Replay, which the API refuses');
    check(await refused.getByTestId('inbound-not-replayable').isVisible(), 'the 401 call does not say it cannot be replayed');
    await wrapsBetweenWords(refused.getByTestId('inbound-error'), 'the 401 call\'s error');
    check(await row.getByTestId('inbound-replay').isVisible(), 'the 202 call offers no Replay');
    check(await row.getByTestId('inbound-status').getAttribute('data-status') === '202', 'the inbound call is not shown as 202');
    check((await row.getByTestId('inbound-action').innerText()).trim() === 'created', 'the inbound call is not shown as created');
    await row.getByTestId('inbound-body-toggle').click();
    check((await row.getByTestId('inbound-body-text').textContent()).includes('ada@example.com'), 'the inbound body is not shown');
    await row.getByTestId('inbound-replay').click();
    const result = row.locator('[data-testid="inbound-replay-result"][data-outcome]');
    await result.waitFor();
    check(await result.getAttribute('data-outcome') === 'ok', `the replay failed: ${await result.innerText()}`);
    check((await result.innerText()).includes('202'), `the replay's outcome reads ${await result.innerText()}`);
    await page.getByTestId('inbound-refresh').click();
    await page.locator('[data-testid="inbound-marker"][data-mark="replay"]').waitFor();
  });

  await step('inbound calls by cursor', async () => {
    // 50 more calls, unsigned: each is refused (401) and kept, like every
    // call, which makes over 50 in all, two pages.
    const hook = await api('GET', `/api/admin/modules/${encodeURIComponent(INBOUND_MODULE_ID)}/inbound-webhook`);
    for (let i = 0; i < 50; i += 10) {
      await Promise.all(Array.from({ length: 10 }, async (_, j) => {
        const res = await fetch(hook.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ n: i + j }) });
        await res.text();
        check(res.status === 401, `unsigned inbound call ${i + j}: HTTP ${res.status}, want 401`);
      }));
    }
    const eventsPath = `/api/admin/modules/${encodeURIComponent(INBOUND_MODULE_ID)}/inbound-events`;
    const firstAPI = await api('GET', `${eventsPath}?limit=50`);
    check(firstAPI.total > 50 && firstAPI.total <= 100 && firstAPI.next_cursor, `the inbound calls number ${firstAPI.total}, next_cursor ${firstAPI.next_cursor}`);
    const moduleHash = `#/inbound?module=${encodeURIComponent(INBOUND_MODULE_ID)}`;
    const shownIDs = () => page.getByTestId('inbound-row').evaluateAll((rows) => rows.map((r) => r.dataset.eventId));
    await page.getByTestId('inbound-refresh').click();
    await page.locator('[data-testid="inbound-page-info"][data-page="1"]', { hasText: `Page 1 of 2 · ${firstAPI.total} calls` }).waitFor();
    check(JSON.stringify(await shownIDs()) === JSON.stringify(firstAPI.data.map((ev) => ev.id)), 'page 1 of the inbound calls is not the API\'s');
    check(await page.getByTestId('inbound-prev').getAttribute('aria-disabled') === 'true', 'the first page of inbound calls offers Previous');
    await page.getByTestId('inbound-next').click();
    await page.locator('[data-testid="inbound-page-info"][data-page="2"]').waitFor();
    const hash = new URL(page.url()).hash;
    check(hash === `${moduleHash}&cursor=${firstAPI.next_cursor}`, `page 2's hash is ${hash}, want the first page's next_cursor`);
    const secondAPI = await api('GET', `${eventsPath}?limit=50&cursor=${firstAPI.next_cursor}`);
    check(secondAPI.next_cursor === null, 'page 2 of the inbound calls has a next_cursor');
    check(JSON.stringify(await shownIDs()) === JSON.stringify(secondAPI.data.map((ev) => ev.id)), 'page 2 of the inbound calls is not the calls after page 1');
    check(await page.getByTestId('inbound-next').getAttribute('aria-disabled') === 'true', 'the last page of inbound calls offers Next');
    await page.getByTestId('inbound-prev').click();
    await page.waitForURL((u) => u.hash === moduleHash);
    await page.locator('[data-testid="inbound-page-info"][data-page="1"]').waitFor();
    check(JSON.stringify(await shownIDs()) === JSON.stringify(firstAPI.data.map((ev) => ev.id)), 'Previous does not show page 1 of the inbound calls again');
  });

  await step('a record\'s deliveries, from the record shown in an attempt', async () => {
    // Two events of one record: its creation and an update.
    const rec = await createRecord('record filter');
    await api('PATCH', `/api/modules/${encodeURIComponent(MODULE_ID)}/records/${encodeURIComponent(rec.id)}`, { fields: { title: 'record filter, changed' } });
    const mine = await until('the record\'s two attempts', async () => {
      const res = await deliveries({ record_id: rec.id });
      return res.data.length >= 2 && res.data.every((d) => d.finished_at) ? res.data : null;
    });
    check(new Set(mine.map((d) => d.event_id)).size === 2 && mine.every((d) => d.record_id === rec.id), 'the API\'s record filter does not answer the record\'s two events');
    const all = await deliveries({ limit: '1' });
    check(all.total > mine.length, 'every attempt is the record\'s: the filter would not be seen narrowing the list');
    await page.evaluate((id) => { location.hash = `#/deliveries/${encodeURIComponent(id)}`; }, mine[0].id);
    // This attempt's link, by the record it names: an attempt shown by
    // an earlier step may still be on the page until the new one renders.
    const recLink = page.locator(`[data-testid="attempt-record-link"][href="#/deliveries?record_id=${encodeURIComponent(rec.id)}"]`);
    await recLink.waitFor();
    const calls = await apiCallsDuring(async () => {
      await recLink.click();
      await page.waitForURL((u) => u.hash === `#/deliveries?record_id=${encodeURIComponent(rec.id)}`);
      await page.locator('[data-testid="page-info"]').waitFor();
    });
    check(calls.length === 1 && new URL(calls[0], BASE).searchParams.get('record_id') === rec.id, `the record's list called ${calls.join(', ')}`);
    const shown = await page.getByTestId('delivery-row').evaluateAll((rows) => rows.map((r) => [r.dataset.deliveryId, r.dataset.recordId]));
    const want = mine.map((d) => d.id).sort();
    check(JSON.stringify(shown.map(([id]) => id).sort()) === JSON.stringify(want), `the record's list shows ${JSON.stringify(shown)}, want ${want}`);
    check(shown.every(([, r]) => r === rec.id), 'the record\'s list shows another record\'s attempt');
    check(await page.getByTestId('filter-record').inputValue() === rec.id, 'the record filter is not shown in the form');
    // The filter from the form, the same list.
    await page.getByTestId('filter-clear').click();
    await page.waitForURL((u) => u.hash === '#/deliveries');
    // The hash changes before the panel replaces the form: filled before
    // that, the old form would take the value and the new, empty one
    // would be applied.
    await page.waitForFunction(() => document.querySelector('[data-testid="filter-record"]')?.value === '');
    await page.getByTestId('filter-record').fill(rec.id);
    await page.getByTestId('filter-apply').click();
    await page.waitForURL((u) => u.hash === `#/deliveries?record_id=${encodeURIComponent(rec.id)}`);
    await page.locator(`[data-testid="page-info"][data-total="${mine.length}"]`).waitFor();
  });

  await step('the signing secret only after Reveal', async () => {
    const { secret } = await api('GET', `/api/admin/webhook-endpoints/${ENDPOINT_ID}/secret`);
    check(secret && secret.length >= 16, 'the endpoint has no secret');
    await page.getByTestId('nav-endpoints').click();
    await card.getByTestId('endpoint-health').waitFor();
    const inPage = () => page.evaluate((s) => document.documentElement.outerHTML.includes(s)
      || [...document.querySelectorAll('input, textarea')].some((i) => i.value.includes(s)), secret);
    check(!await inPage(), 'the secret is in the page before Reveal');
    check(!apiRequests.some((u) => u.includes('/secret')), 'the page fetched a secret before Reveal');
    await card.getByTestId('reveal-secret').click();
    check(await card.getByTestId('endpoint-secret').inputValue() === secret, 'Reveal does not show the secret');
    check(apiRequests.filter((u) => u.includes('/secret')).length === 1, 'Reveal did not make exactly one secret call');
    await card.getByTestId('hide-secret').click();
    await card.getByTestId('endpoint-secret').waitFor({ state: 'detached' });
    check(!await inPage(), 'the secret is still in the page after Hide');
  });

  await step('custom headers named, their values only after Reveal headers', async () => {
    const value = `Bearer console-gw-${Date.now()}`;
    await api('PATCH', `/api/admin/webhook-endpoints/${ENDPOINT_ID}`, { headers: { Authorization: value } });
    await page.getByTestId('endpoints-refresh').click();
    const chip = card.locator('[data-testid="endpoint-header"][data-name="Authorization"]');
    await chip.waitFor();
    check(!(await chip.innerText()).includes('console-gw-'), 'the header chip shows its value');
    const inPage = () => page.evaluate((s) => document.documentElement.outerHTML.includes(s)
      || [...document.querySelectorAll('input, textarea')].some((i) => i.value.includes(s)), value);
    check(!await inPage(), 'a header value is in the page before Reveal headers');
    check(!apiRequests.some((u) => u.includes('/headers')), 'the page fetched the headers before Reveal headers');
    await card.getByTestId('reveal-headers').click();
    const field = card.locator('[data-testid="endpoint-header-value"][data-name="Authorization"]');
    check(await field.inputValue() === value, 'Reveal headers does not show the value');
    check(apiRequests.filter((u) => u.includes('/headers')).length === 1, 'Reveal headers did not make exactly one headers call');
    await card.getByTestId('hide-headers').click();
    await field.waitFor({ state: 'detached' });
    check(!await inPage(), 'a header value is still in the page after Hide');
    await api('PATCH', `/api/admin/webhook-endpoints/${ENDPOINT_ID}`, { headers: null });
    await page.getByTestId('endpoints-refresh').click();
    await chip.waitFor({ state: 'detached' });
  });

  await step('speed of a 50-row deliveries page', async () => {
    await seeding;
    const times = [];
    for (let i = 0; i < 5; i++) {
      await page.getByTestId('nav-inbound').click();
      await page.getByTestId('modules-table').waitFor();
      const calls = await apiCallsDuring(async () => {
        times.push(await page.evaluate(() => new Promise((resolve, reject) => {
          const rows = () => document.querySelectorAll('[data-testid="delivery-row"]').length;
          const t0 = performance.now();
          const obs = new MutationObserver(() => {
            if (rows() >= 50) {
              obs.disconnect();
              resolve(performance.now() - t0);
            }
          });
          obs.observe(document.body, { childList: true, subtree: true });
          location.hash = '#/deliveries';
          setTimeout(() => {
            obs.disconnect();
            reject(new Error(`${rows()} rows after 20 s, want 50`));
          }, 20000);
        })));
      });
      check(calls.length === 1, `the deliveries page made ${calls.length} API calls`);
      check(await page.getByTestId('delivery-row').count() === 50, 'the page does not hold 50 rows');
    }
    const sorted = [...times].sort((a, b) => a - b);
    console.log(`console-perf deliveries50 median_ms=${sorted[2].toFixed(1)} max_ms=${sorted[4].toFixed(1)}`);

    // Paging by cursor: the total is over 50, so there is a second page.
    // Next follows the API's next_cursor, kept in the hash; Previous goes
    // back through the cursors of the pages before.
    const info = page.getByTestId('page-info');
    const total = Number(await info.getAttribute('data-total'));
    check(total > 50 && (await info.innerText()).startsWith(`Page 1 of ${Math.ceil(total / 50)}`), `the pager reads ${await info.innerText()}`);
    const shownIDs = () => page.getByTestId('delivery-row').evaluateAll((rows) => rows.map((r) => r.dataset.deliveryId));
    const first = await shownIDs();
    const firstAPI = await deliveries({ limit: '50' });
    check(firstAPI.next_cursor, 'the first page of more than 50 attempts has no next_cursor');
    await page.getByTestId('page-next').click();
    await page.waitForURL((u) => /^#\/deliveries\?cursor=[A-Za-z0-9_-]+$/.test(u.hash));
    await page.locator('[data-testid="page-info"][data-page="2"]', { hasText: 'Page 2 of' }).waitFor();
    const cursor2 = new URLSearchParams(new URL(page.url()).hash.split('?')[1]).get('cursor');
    const second = await shownIDs();
    // Seeded attempts may still be arriving, on top of the list: page 2 holds
    // the attempts after page 1's last row, whatever came meanwhile.
    const secondAPI = await deliveries({ limit: '50', cursor: cursor2 });
    check(JSON.stringify(second) === JSON.stringify(secondAPI.data.map((d) => d.id)), `page 2 shows ${second.length} attempts, not those after its cursor`);
    check(second.length > 0 && second.every((id) => !first.includes(id)), 'page 2 repeats an attempt of page 1');
    const total2 = Number(await info.getAttribute('data-total'));
    check(second.length === Math.min(50, total2 - 50), `page 2 holds ${second.length} attempts of ${total2}`);
    const calls = await apiCallsDuring(async () => {
      await page.reload();
      await page.locator('[data-testid="page-info"][data-page="2"]').waitFor();
    });
    check(JSON.stringify(await shownIDs()) === JSON.stringify(second), 'page 2 shows other attempts after a reload');
    check(calls.some((u) => new URL(u, BASE).searchParams.get('cursor') === cursor2 && !new URL(u, BASE).searchParams.has('page')),
      `page 2 after a reload called ${calls.join(', ')}`);
    // Over 100 attempts: a third page, and Previous back through the stack.
    check(secondAPI.next_cursor, `page 2 of ${total2} attempts has no next_cursor`);
    await page.getByTestId('page-next').click();
    await page.locator('[data-testid="page-info"][data-page="3"]').waitFor();
    check(new URL(page.url()).hash.includes(`back=${cursor2}`), `page 3's hash ${new URL(page.url()).hash} does not keep page 2's cursor`);
    const third = await shownIDs();
    check(third.length > 0 && third.every((id) => !first.includes(id) && !second.includes(id)), 'page 3 repeats an attempt of an earlier page');
    await page.getByTestId('page-prev').click();
    await page.locator('[data-testid="page-info"][data-page="2"]').waitFor();
    check(JSON.stringify(await shownIDs()) === JSON.stringify(second), 'Previous from page 3 does not show page 2 again');
    await page.getByTestId('page-prev').click();
    await page.waitForURL((u) => u.hash === '#/deliveries');
    await page.locator('[data-testid="page-info"][data-page="1"]', { hasText: 'Page 1 of' }).waitFor();
    check(await page.getByTestId('page-prev').getAttribute('aria-disabled') === 'true', 'the first page offers Previous');
  });

  await step('a broker endpoint shows its kind and its URL with the password masked', async () => {
    const password = 'console-nats-pw-5e1f';
    const ep = await api('POST', '/api/admin/webhook-endpoints', {
      url: `nats://app:${password}@127.0.0.1:4222/records.{module}.{event_type}`, description: 'broker',
      events: ['record_deleted'], module_ids: [INBOUND_MODULE_ID],
    });
    await page.getByTestId('nav-endpoints').click();
    const card = page.locator(`[data-testid="endpoint"][data-endpoint-id="${ep.id}"]`);
    await card.waitFor();
    const kind = card.getByTestId('endpoint-kind');
    check(await kind.getAttribute('data-kind') === 'nats' && (await kind.innerText()).trim() === 'NATS', `the kind reads ${await kind.innerText()}`);
    const shownURL = (await card.getByTestId('endpoint-url').innerText()).trim();
    check(shownURL === 'nats://app:****@127.0.0.1:4222/records.{module}.{event_type}', `the URL reads ${shownURL}`);
    check(!(await page.content()).includes(password), 'the page holds the broker password');
    await api('DELETE', `/api/admin/webhook-endpoints/${ep.id}`);
    // Leave the endpoints page, which the next step opens by its link.
    await page.getByTestId('nav-deliveries').click();
    await page.waitForURL((u) => u.hash.startsWith('#/deliveries'));
  });

  await step('endpoints 20 to a page, the page in the hash', async () => {
    // 21 more endpoints make 22, listed newest first: the test's endpoint is
    // on page 2. They hear only deletions in the inbound module, which no
    // step makes, so nothing is delivered to them.
    const extra = [];
    for (let i = 0; i < 21; i++) {
      const ep = await api('POST', '/api/admin/webhook-endpoints', {
        url: `${RECEIVER}/hook?n=${i}`, description: `paging ${i}`, events: ['record_deleted'], module_ids: [INBOUND_MODULE_ID],
      });
      extra.push(ep.id);
    }
    const { total } = await api('GET', '/api/admin/webhook-endpoints?limit=1');
    check(total === 22, `the service holds ${total} endpoints, want 22`);
    const info = page.getByTestId('endpoints-page-info');
    const cards = page.getByTestId('endpoint');
    const ids = () => cards.evaluateAll((els) => els.map((e) => e.dataset.endpointId));
    // load does what opens a page and answers its one API call.
    const load = async (what, fn, pageNo, pages = 2) => {
      const calls = await apiCallsDuring(async () => {
        await fn();
        await page.locator('[data-testid="endpoints-page-info"]', { hasText: new RegExp(`^Page ${pageNo} of ${pages} ·`) }).waitFor();
      });
      check(calls.length === 1, `${what} made ${calls.length} API calls: ${calls.join(', ')}`);
      const q = new URL(calls[0], BASE).searchParams;
      check(q.get('limit') === '20' && q.get('page') === String(pageNo) && q.get('include') === 'stats', `${what} called ${calls[0]}`);
    };

    await load('the endpoints page', () => page.getByTestId('nav-endpoints').click(), 1);
    check(await cards.count() === 20, `page 1 holds ${await cards.count()} endpoints, want 20`);
    check(await info.getAttribute('data-total') === '22', `the page info's total is ${await info.getAttribute('data-total')}`);
    check((await info.innerText()).trim() === 'Page 1 of 2 · 22 endpoints', `the page info reads ${await info.innerText()}`);
    const shown = page.getByTestId('endpoints-total');
    check(await shown.getAttribute('data-total') === '22' && (await shown.innerText()).startsWith('Endpoints 1–20 of 22;'), `the total reads ${await shown.innerText()}`);
    check(await page.getByTestId('endpoints-prev').getAttribute('aria-disabled') === 'true', 'page 1 offers a previous page');
    const first = await ids();

    await load('the next page', () => page.getByTestId('endpoints-next').click(), 2);
    check(new URL(page.url()).hash === '#/endpoints?page=2', `the next page's hash is ${new URL(page.url()).hash}`);
    check(await cards.count() === 2, `page 2 holds ${await cards.count()} endpoints, want 2`);
    check((await shown.innerText()).startsWith('Endpoints 21–22 of 22;'), `the total on page 2 reads ${await shown.innerText()}`);
    check(await page.getByTestId('endpoints-next').getAttribute('aria-disabled') === 'true', 'the last page offers a next page');
    check(await card.isVisible(), 'the test\'s endpoint, the oldest, is not on page 2');
    const both = [...first, ...await ids()];
    const want = [ENDPOINT_ID, ...extra];
    check(new Set(both).size === 22 && want.every((id) => both.includes(id)), 'the two pages do not hold each endpoint once');

    // Refresh and a toggle reload the same page.
    await load('a refresh of page 2', () => page.getByTestId('endpoints-refresh').click(), 2);
    const other = page.locator(`[data-testid="endpoint"]:not([data-endpoint-id="${ENDPOINT_ID}"])`);
    const otherID = await other.getAttribute('data-endpoint-id');
    check(extra.includes(otherID), `the other endpoint on page 2 is ${otherID}`);
    const toggled = page.locator(`[data-testid="endpoint"][data-endpoint-id="${otherID}"]`);
    const calls = await apiCallsDuring(async () => {
      await toggled.getByTestId('endpoint-toggle').click();
      await toggled.locator('[data-testid="endpoint-health"][data-state="disabled"]').waitFor();
    });
    check(calls.length === 2 && calls[0].endsWith(`/webhook-endpoints/${otherID}`) && new URL(calls[1], BASE).searchParams.get('page') === '2',
      `Disable called ${calls.join(', ')}, want the PATCH and page 2`);
    check(new URL(page.url()).hash === '#/endpoints?page=2' && (await info.innerText()).startsWith('Page 2 of 2'), 'Disable left page 2');

    // A page past the end (endpoints deleted meanwhile) offers the last one.
    await load('a page past the end', () => page.evaluate(() => { location.hash = '#/endpoints?page=3'; }), 3);
    await page.getByTestId('endpoints-page-empty').waitFor();
    check(await page.getByTestId('endpoints-prev').getAttribute('href') === '#/endpoints?page=2', 'past the end, Previous does not go to the last page');

    await load('the previous page', () => page.getByTestId('endpoints-prev').click(), 2);
    await load('the first page', () => page.getByTestId('endpoints-prev').click(), 1);
    check(new URL(page.url()).hash === '#/endpoints', `the first page's hash is ${new URL(page.url()).hash}`);
    check(await cards.count() === 20, `back on page 1, ${await cards.count()} endpoints, want 20`);

    // Later steps expect the one endpoint, on page 1.
    for (const id of extra) await api('DELETE', `/api/admin/webhook-endpoints/${id}`);
    await load('a refresh after the deletions', () => page.getByTestId('endpoints-refresh').click(), 1, 1);
    check(await cards.count() === 1 && await card.isVisible(), 'the test\'s endpoint is not alone on page 1');
    check((await shown.innerText()).startsWith('1 endpoint;'), `the total reads ${await shown.innerText()}`);
  });

  await step('the endpoints page with its statistics', async () => {
    await page.getByTestId('nav-endpoints').click();
    await card.getByTestId('endpoint-chart').waitFor();
    if (SCREENSHOT) {
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      console.log(`     screenshot ${SCREENSHOT}`);
    }
  });

  await step('disable and enable the endpoint', async () => {
    await card.getByTestId('endpoint-toggle').click();
    await card.locator('[data-testid="endpoint-health"][data-state="disabled"]').waitFor();
    check((await card.getByTestId('endpoint-health-detail').innerText()).includes('disabled: manual'), 'the disabled reason is not shown');
    check((await card.getByTestId('endpoint-toggle').innerText()).trim() === 'Enable', 'a disabled endpoint offers no Enable');
    await card.getByTestId('endpoint-toggle').click();
    await card.locator('[data-testid="endpoint-health"]:not([data-state="disabled"])').waitFor();
    check((await api('GET', `/api/admin/webhook-endpoints/${ENDPOINT_ID}`)).enabled === true, 'the endpoint was not enabled again');
  });

  await step('the content filter: shown, refused with its field, set, removed', async () => {
    const path = `/api/admin/webhook-endpoints/${ENDPOINT_ID}`;
    await page.getByTestId('nav-endpoints').click();
    await card.getByTestId('endpoint-health').waitFor();
    check(await card.getByTestId('endpoint-filter').count() === 0, 'a filter is shown before one is set');
    await card.getByTestId('endpoint-edit-filter').click();
    await expectingStatus(422, async () => {
      await card.getByTestId('filter-input').fill('{"nope": "x"}');
      await card.getByTestId('filter-submit').click();
      const refused = card.getByTestId('filter-refused');
      await refused.waitFor();
      check((await refused.innerText()).includes('filter.nope'), `the refusal reads ${await refused.innerText()}`);
    });
    await card.getByTestId('filter-input').fill('{"title": "only this"}');
    await card.getByTestId('filter-submit').click();
    await card.getByTestId('endpoint-filter').waitFor();
    const shown = await card.getByTestId('endpoint-filter').innerText();
    check(shown.includes('title = "only this"'), `the filter reads ${shown}`);
    check(JSON.stringify((await api('GET', path)).filter) === '{"title":"only this"}', 'the filter was not saved');
    await card.getByTestId('endpoint-edit-filter').click();
    check(await card.getByTestId('filter-input').inputValue() === '{"title":"only this"}', 'the form does not hold the filter');
    await card.getByTestId('filter-input').fill('');
    await card.getByTestId('filter-submit').click();
    await card.getByTestId('endpoint-filter').waitFor({ state: 'detached' });
    check(Object.keys((await api('GET', path)).filter).length === 0, 'the filter was not removed');
  });

  await step('ordering per record: shown, switched on and off', async () => {
    const path = `/api/admin/webhook-endpoints/${ENDPOINT_ID}`;
    await card.locator('[data-testid="endpoint-ordering"][data-ordering="none"]').waitFor();
    await card.getByTestId('endpoint-ordering-toggle').click();
    await card.locator('[data-testid="endpoint-ordering"][data-ordering="record"]').waitFor();
    check((await api('GET', path)).ordering === 'record', 'ordering was not saved');
    await card.getByTestId('endpoint-ordering-toggle').click();
    await card.locator('[data-testid="endpoint-ordering"][data-ordering="none"]').waitFor();
    check((await api('GET', path)).ordering === 'none', 'ordering was not switched off');
  });

  await step('the throttle: shown, set, removed', async () => {
    const path = `/api/admin/webhook-endpoints/${ENDPOINT_ID}`;
    await card.locator('[data-testid="endpoint-throttle"][data-rate-limit=""]').waitFor();
    await card.getByTestId('endpoint-edit-throttle').click();
    await card.getByTestId('throttle-rate').fill('20');
    await card.getByTestId('throttle-in-flight').fill('2');
    await card.getByTestId('throttle-submit').click();
    await card.locator('[data-testid="endpoint-throttle"][data-rate-limit="20"][data-max-in-flight="2"]').waitFor();
    const saved = await api('GET', path);
    check(saved.rate_limit?.per_second === 20 && saved.max_in_flight === 2, `the throttle saved reads ${JSON.stringify([saved.rate_limit, saved.max_in_flight])}`);
    await card.getByTestId('endpoint-edit-throttle').click();
    check(await card.getByTestId('throttle-rate').inputValue() === '20', 'the form does not hold the rate limit');
    await card.getByTestId('throttle-rate').fill('');
    await card.getByTestId('throttle-in-flight').fill('');
    await card.getByTestId('throttle-submit').click();
    await card.locator('[data-testid="endpoint-throttle"][data-rate-limit=""][data-max-in-flight=""]').waitFor();
    const cleared = await api('GET', path);
    check(cleared.rate_limit === null && cleared.max_in_flight === null, 'the throttle was not removed');
  });

  await step('an API error shows its message and request id', async () => {
    await expectingStatus(404, async () => {
      await page.evaluate(() => { location.hash = '#/deliveries/whd_nosuchattempt'; });
      const err = page.getByTestId('error');
      await err.waitFor();
      check((await err.innerText()).includes('not_found'), `the error reads ${await err.innerText()}`);
      check(/^req_/.test(await err.getByTestId('request-id').innerText()), 'the error shows no request id');
      await wrapsBetweenWords(err.locator('strong'), 'an API error\'s message');
    });
  });

  await step('resync the endpoint, with progress', async () => {
    await page.getByTestId('nav-endpoints').click();
    await card.waitFor();
    await card.getByTestId('endpoint-resync').click();
    // Without record_snapshot among its events the form says so and cannot start.
    await card.getByTestId('resync-not-subscribed').waitFor();
    check(await card.getByTestId('resync-submit').isDisabled(), 'a resync can be started on an endpoint without record_snapshot');
    await api('PATCH', `/api/admin/webhook-endpoints/${ENDPOINT_ID}`,
      { events: ['record_snapshot', 'record_created', 'record_updated', 'record_deleted'] });
    await page.getByTestId('endpoints-refresh').click();
    await card.getByTestId('endpoint-resync').click();
    await card.getByTestId('resync-submit').click();
    const progress = card.getByTestId('resync-progress');
    await progress.waitFor();
    await card.locator('[data-testid="resync-progress"]:not([data-status="running"])').waitFor({ timeout: 30000 });
    const status = await progress.getAttribute('data-status');
    const examined = Number(await card.getByTestId('resync-examined').getAttribute('data-value'));
    const sent = Number(await card.getByTestId('resync-sent').getAttribute('data-value'));
    const covered = Number(await card.getByTestId('resync-covered').getAttribute('data-value'));
    check(status === 'completed', `the resync ended ${status}`);
    check(examined >= 1 && sent + covered === examined, `the resync examined ${examined}, sent ${sent}, covered ${covered}`);
    check(await card.getByTestId('resync-bar').count() === 1, 'no progress bar');
    console.log(`     resync examined=${examined} sent=${sent} covered=${covered}`);
  });

  await step('a 401 returns to sign-in; Sign out forgets the key', async () => {
    await page.getByTestId('nav-endpoints').click();
    await card.waitFor();
    await expectingStatus(401, async () => {
      await page.evaluate(() => {
        for (const k of Object.keys(sessionStorage)) sessionStorage.setItem(k, `rh_revoked_${'y'.repeat(32)}`);
      });
      await page.getByTestId('endpoints-refresh').click();
      await page.getByTestId('signin-error').waitFor();
      check((await page.getByTestId('signin-error').innerText()).trim() !== '', 'the 401 message is empty');
      check(await page.evaluate(() => sessionStorage.length) === 0, 'the refused key is still in sessionStorage');
    });
    await page.getByTestId('signin-key').fill(KEY);
    await page.getByTestId('signin-submit').click();
    await card.waitFor();
    await page.getByTestId('sign-out').click();
    await page.getByTestId('signin-form').waitFor();
    check(await page.evaluate(() => sessionStorage.length) === 0, 'Sign out left sessionStorage');
  });
}

// seed creates records until the service holds at least 50 attempts, and
// waits for them.
async function seed() {
  const { total } = await deliveries({});
  const n = Math.max(0, 102 - total);
  for (let i = 0; i < n; i += 5) {
    await Promise.all(Array.from({ length: Math.min(5, n - i) }, (_, j) => createRecord(`seed ${i + j}`)));
  }
  await until('101 delivery attempts', async () => (await deliveries({ limit: '1' })).total >= 101, 45000);
}

main().then(() => {
  console.log('console browser test passed');
}, (err) => {
  console.error(`FAIL ${err instanceof Failure ? err.message : err.stack || err}`);
  process.exitCode = 1;
});
