// The page's entry point: sign-in state, routing between views without
// reloading, and the header.

import { api, loadSession, onSignedOut, explain } from './api.js';
import { h, replace } from './dom.js';
import { agentsView } from './agents.js';
import { agentView } from './agent.js';
import { tasksView } from './tasks.js';
import { taskView } from './task.js';
import { integrationsView } from './integrations.js';

const routes = [
  { path: /^\/$/, nav: 'agents', view: agentsView },
  { path: /^\/agents\/([^/]+)$/, nav: 'agents', view: agentView, param: 'id' },
  { path: /^\/tasks$/, nav: 'tasks', view: tasksView },
  { path: /^\/tasks\/([^/]+)$/, nav: 'tasks', view: taskView, param: 'id' },
  { path: /^\/integrations$/, nav: 'integrations', view: integrationsView },
];

const main = document.getElementById('main');
const signOut = document.getElementById('sign-out');
let current = null;
let signedIn = false;
let renderSeq = 0;

// navigate shows the view of path, adding it to the history.
function navigate(path) {
  history.pushState(null, '', path);
  render({ focus: true });
}
navigate.signedOut = () => showSignedOut(true);

async function render({ focus = false } = {}) {
  const seq = ++renderSeq;
  if (current) { current.dispose(); current = null; }
  if (!signedIn) { showSignedOut(false); return; }
  const route = routes.find((r) => r.path.test(location.pathname));
  document.querySelectorAll('[data-nav]').forEach((a) => {
    if (route && a.dataset.nav === route.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  });
  if (!route) {
    replace(main, h('h1', { tabindex: '-1' }, 'Page not found'), h('p', {}, h('a', { href: '/' }, 'Go to the agents')));
    return;
  }
  const m = route.path.exec(location.pathname);
  const params = route.param ? { [route.param]: decodeURIComponent(m[1]) } : {};
  try {
    const view = await route.view(main, params, navigate);
    if (seq !== renderSeq) { view.dispose(); return; }
    current = view;
  } catch (err) {
    replace(main, h('h1', { tabindex: '-1' }, 'Something went wrong'), h('p', { class: 'form-error', role: 'alert' }, explain(err)));
  }
  // Move the focus to the new view's heading, unless the person already
  // went on into the view while it loaded.
  const active = document.activeElement;
  const movedOn = active && active !== main && main.contains(active);
  if (focus && !movedOn) {
    const heading = main.querySelector('h1');
    if (heading) heading.focus();
  }
}

function showSignedOut(ended) {
  signedIn = false;
  if (current) { current.dispose(); current = null; }
  signOut.hidden = true;
  document.title = 'Sign in · A2A Mesh';
  replace(main, h('section', { class: 'panel narrow', 'aria-labelledby': 'signin-title' },
    h('h1', { id: 'signin-title', tabindex: '-1' }, ended ? 'You are signed out' : 'Sign in'),
    ended ? h('p', { class: 'notice' }, 'Your sign-in session ended.') : null,
    h('p', {}, 'On the machine where the platform runs, run this and open the link it prints:'),
    h('pre', { class: 'command' }, h('code', {}, 'a2a-platform login')),
    h('p', { class: 'muted' }, 'The link works once, for two minutes. It opens this page signed in.')));
}

// Links inside the page change the view without reloading; downloads,
// other sites and modified clicks keep the browser's behaviour.
document.addEventListener('click', (e) => {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = e.target.closest('a[href]');
  if (!a || a.target || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  if (url.hash && url.pathname === location.pathname) return;
  if (!routes.some((r) => r.path.test(url.pathname))) return;
  e.preventDefault();
  navigate(url.pathname + url.search);
});
window.addEventListener('popstate', () => render({ focus: true }));

signOut.addEventListener('click', async () => {
  try { await api('POST', '/web/logout'); } catch { /* signed out either way */ }
  showSignedOut(true);
});
onSignedOut(() => showSignedOut(true));

async function boot() {
  try {
    signedIn = await loadSession();
  } catch (err) {
    replace(main, h('h1', { tabindex: '-1' }, 'The platform could not be reached'), h('p', { class: 'form-error', role: 'alert' }, explain(err)),
      h('p', {}, h('button', { type: 'button', onclick: boot }, 'Try again')));
    return;
  }
  signOut.hidden = !signedIn;
  render();
}
boot();
