// The platform's REST API, with the sign-in session's cookie. State-changing
// requests carry the session's CSRF token; errors become ApiError with a
// sentence a person understands.

export const session = {
  csrf: '',
  apiBase: location.origin,
  eventTypes: [],
  expiresAt: null,
};

// ApiError is an answer of the API that is not a success, or no answer.
export class ApiError extends Error {
  constructor(code, message, httpStatus, runStatus) {
    super(message);
    this.code = code;
    this.httpStatus = httpStatus;
    this.runStatus = runStatus || '';
  }
}

const signedOutHandlers = [];

// onSignedOut registers what to do when the API says the session ended.
export function onSignedOut(fn) { signedOutHandlers.push(fn); }

// loadSession asks who we are; it answers false when nobody is signed in.
export async function loadSession() {
  try {
    const info = await api('GET', '/web/session', undefined, { quietSignedOut: true });
    session.csrf = info.csrf_token || '';
    session.apiBase = info.api_base || location.origin;
    session.eventTypes = info.event_types || [];
    session.expiresAt = info.expires_at || null;
    return true;
  } catch (err) {
    if (err instanceof ApiError && err.httpStatus === 401) return false;
    throw err;
  }
}

// api sends one request and returns the decoded answer (null for 204).
export async function api(method, path, body, { quietSignedOut = false } = {}) {
  const headers = { Accept: 'application/json' };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = session.csrf;
  let resp;
  try {
    resp = await fetch(path, init);
  } catch {
    throw new ApiError('NETWORK', 'The platform could not be reached. It may be restarting: try again in a moment.', 0);
  }
  if (resp.status === 204) return null;
  let data = null;
  try { data = await resp.json(); } catch { data = null; }
  if (resp.ok) return data;
  const e = (data && data.error) || {};
  const err = new ApiError(e.code || `HTTP_${resp.status}`, e.message || resp.statusText || 'the request failed', resp.status, e.status);
  if (resp.status === 401 && !quietSignedOut) signedOutHandlers.forEach((fn) => fn(err));
  throw err;
}

const fieldLabels = {
  name: 'Name',
  description: 'Description',
  instructions: 'Instructions',
  skills: 'Skills',
  url: 'URL',
  secret: 'Secret',
  agent_id: 'Agent',
  types: 'Event types',
  reason: 'Reason',
  input: 'Message',
};

// fieldOf names the request field an error is about, from the start of its
// message ("name is required", "skills[1] needs…", "url must be…"), or ''.
export function fieldOf(err) {
  if (!(err instanceof ApiError) || (err.code !== 'INVALID_REQUEST' && err.code !== 'TARGET_NOT_ALLOWED')) return '';
  const m = /^([a-z_]+)(\[\d+\])?\b/.exec(err.message);
  if (m && fieldLabels[m[1]]) return m[1];
  const unknown = /unknown event type/.exec(err.message);
  return unknown ? 'types' : '';
}

// explain turns an error into a sentence for people.
export function explain(err) {
  if (!(err instanceof ApiError)) return `Something went wrong on this page: ${err && err.message ? err.message : err}.`;
  switch (err.code) {
    case 'NETWORK':
      return err.message;
    case 'UNAUTHORIZED':
      return 'You are signed out. Run `a2a-platform login` on the platform\'s machine and open the link it prints.';
    case 'FORBIDDEN':
      return /CSRF|cross-origin/i.test(err.message)
        ? 'This page is out of date or was opened from another site. Reload it and try again.'
        : sentence(err.message);
    case 'NOT_FOUND':
      return 'This no longer exists: it may have been deleted. ' + sentence(err.message);
    case 'INVALID_TRANSITION':
      return err.runStatus
        ? `This task is already ${statusWord(err.runStatus)}, so it cannot be changed any more.`
        : sentence(err.message);
    case 'UNAVAILABLE':
    case 'TIMEOUT':
      return 'The platform is busy or restarting and did not answer. Try again in a moment.';
    case 'INTERNAL':
      return 'The platform hit an internal error. Try again; if it keeps happening, check the platform\'s log.';
    case 'PAYLOAD_TOO_LARGE':
      return 'That is too large for the platform to accept. ' + sentence(err.message);
    case 'TARGET_NOT_ALLOWED':
      return 'The platform refuses to send webhooks to that address because it is on a private network. ' +
        'The operator can allow it by starting the platform with --allow-private-webhooks.';
    default:
      return sentence(err.message);
  }
}

// sentence capitalises an API message, names fields as the form does, and
// ends it with a full stop.
function sentence(message) {
  let s = String(message || '').trim();
  const m = /^([a-z_]+)(\[(\d+)\])?/.exec(s);
  if (m && fieldLabels[m[1]]) {
    const label = m[3] !== undefined ? `${fieldLabels[m[1]]} (number ${Number(m[3]) + 1})` : fieldLabels[m[1]];
    s = label + s.slice(m[0].length);
  }
  s = s.charAt(0).toUpperCase() + s.slice(1);
  return /[.!?]$/.test(s) ? s : `${s}.`;
}

export function statusWord(status) {
  return { 'input-required': 'waiting for input', 'approval-required': 'waiting for approval' }[status] || status;
}
