// Calls of the console's JSON API (/console/api): same origin, the session cookie, the
// CSRF token on every change; a 401 sends the page to sign-in.

let csrfToken = null;
let onSignedOut = () => {};

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.detail) || `HTTP ${status}`);
    this.status = status;
    this.code = (body && body.code) || (status === 0 ? 'network' : `http_${status}`);
    this.detail = (body && body.detail) || '';
    this.body = body;
  }
}

export function setCsrf(token) { csrfToken = token; }
export function whenSignedOut(handler) { onSignedOut = handler; }

export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params || {})) {
    if (value === null || value === undefined || value === '') continue;
    search.set(name, value);
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

export async function call(method, path, { params, body, quiet401 = false } = {}) {
  const headers = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET' && csrfToken) headers['X-CSRF-Token'] = csrfToken;
  let response;
  try {
    response = await fetch(`/console/api${path}${query(params)}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, null);
  }
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = null; }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401 && error.code === 'signed_out' && !quiet401) onSignedOut(error);
    throw error;
  }
  return { status: response.status, body: data };
}

export const get = (path, params) => call('GET', path, { params });
export const post = (path, body, params) => call('POST', path, { body: body ?? {}, params });
export const patch = (path, body, params) => call('PATCH', path, { body, params });
export const put = (path, body, params) => call('PUT', path, { body, params });
export const del = (path, params) => call('DELETE', path, { params });
