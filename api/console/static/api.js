// Calls to the admin API with the signed-in key. The key lives in
// sessionStorage only: it goes when the tab closes, and never into
// localStorage, a cookie or a URL.

const KEY = 'recordhub.console.adminKey';

export const session = {
  get: () => sessionStorage.getItem(KEY) || '',
  set: (key) => sessionStorage.setItem(KEY, key),
  clear: () => sessionStorage.removeItem(KEY),
};

// ApiError is an error response of the API, {error, message, request_id,
// details}, or a network failure (status 0).
export class ApiError extends Error {
  constructor(status, body) {
    const b = body && typeof body === 'object' ? body : {};
    super(typeof b.message === 'string' && b.message ? b.message : `the service answered HTTP ${status}`);
    this.status = status;
    this.code = typeof b.error === 'string' ? b.error : `http_${status}`;
    this.requestId = typeof b.request_id === 'string' ? b.request_id : '';
    this.details = Array.isArray(b.details) ? b.details : [];
  }
}

let unauthorized = () => {};

// onUnauthorized sets what a 401 with the session's key does (back to
// sign-in).
export function onUnauthorized(f) {
  unauthorized = f;
}

// request calls the API and answers its JSON. opts.key checks a key that
// is not (yet) the session's; opts.body is sent as JSON.
export async function request(method, path, opts = {}) {
  const key = opts.key ?? session.get();
  const headers = { Accept: 'application/json' };
  if (key) headers.Authorization = `Bearer ${key}`;
  const init = { method, headers, cache: 'no-store', credentials: 'omit', redirect: 'error' };
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (e) {
    throw new ApiError(0, { error: 'network', message: `the service could not be reached (${e.message})` });
  }
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data);
    if (res.status === 401 && opts.key === undefined) unauthorized(err);
    throw err;
  }
  return data;
}

// adminPath builds /api/admin/<segments>, each segment escaped.
export function adminPath(...segments) {
  return '/api/admin/' + segments.map((s) => encodeURIComponent(s)).join('/');
}

// withQuery appends the non-empty members of params as a query string.
export function withQuery(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}
