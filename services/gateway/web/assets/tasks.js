// Task runs: newest first, filtered by agent and status, updated live.

import { api, explain } from './api.js';
import { h, replace, field, formError } from './dom.js';
import { Live } from './live.js';
import { statuses, statusLabel, runText, excerpt, time } from './format.js';
import { statusBadge } from './runview.js';

const runEvents = ['created', 'claimed', 'progress', 'input_required', 'requeued', 'completed', 'failed', 'canceled', 'approval_requested', 'approval_decided']
  .map((t) => `task_run.${t}`).join(',');

export async function tasksView(main, _params, nav) {
  document.title = 'Tasks · A2A Mesh';
  const query = new URLSearchParams(location.search);
  const agentField = field({ label: 'Agent', name: 'agent_id', kind: 'select', value: query.get('agent') || '', options: [['', 'All agents']] });
  const statusField = field({
    label: 'Status', name: 'status', kind: 'select', value: query.get('status') || '',
    options: [['', 'Any status'], ...statuses.map((s) => [s, statusLabel(s)])],
  });
  const list = h('ul', { class: 'runs', 'aria-label': 'Task runs' });
  const more = h('button', { type: 'button', hidden: true }, 'Show older tasks');
  const error = formError();
  const summary = h('p', { class: 'muted small', role: 'status' });
  // A region that cannot be reached: the tasks it keeps are not listed.
  const partial = h('p', { class: 'notice', id: 'tasks-partial', role: 'status', hidden: true });
  const rows = new Map();
  const names = new Map();
  let cursor = '';
  let live = null;

  replace(main,
    h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, 'Tasks')),
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter tasks', onsubmit: (e) => e.preventDefault() },
      agentField.wrap, statusField.wrap),
    error.el,
    partial,
    summary,
    h('section', { class: 'panel', 'aria-label': 'Task list' }, list, h('div', { class: 'row' }, more)));

  try {
    const { agents } = await api('GET', '/agent-accounts');
    agents.sort((a, b) => a.name.localeCompare(b.name));
    for (const a of agents) {
      names.set(a.agent_id, a.name);
      agentField.control.appendChild(h('option', { value: a.agent_id, selected: a.agent_id === query.get('agent') }, a.name));
    }
  } catch (err) {
    error.show(`The agents could not be loaded. ${explain(err)}`);
  }

  const filter = () => ({ agent: agentField.control.value, status: statusField.control.value });

  function row(run) {
    let li = rows.get(run.task_run_id);
    if (!li) {
      li = h('li', { dataset: { taskRunId: run.task_run_id } });
      rows.set(run.task_run_id, li);
    } else if (Number(li.dataset.revision || 0) > (run.revision || 0)) {
      return li;
    }
    li.dataset.revision = String(run.revision || 0);
    replace(li,
      h('a', { class: 'run-title', href: `/tasks/${run.task_run_id}` }, excerpt(runText(run)) || '(no text)'),
      statusBadge(run.status),
      h('span', { class: 'run-meta' },
        `${names.get(run.target_agent_id) || 'Unknown agent'} · ${time(run.created_at)}`,
        run.progress && run.progress.message && run.status === 'running' ? ` · ${excerpt(run.progress.message, 60)}` : ''));
    return li;
  }

  async function load(append) {
    const f = filter();
    const q = new URLSearchParams({ limit: '25' });
    if (f.agent) q.set('agent_id', f.agent);
    if (f.status) q.set('status', f.status);
    if (append && cursor) q.set('cursor', cursor);
    try {
      const res = await api('GET', `/task-runs?${q}`);
      error.clear();
      const missing = res.unreachable_regions || [];
      partial.hidden = missing.length === 0;
      partial.textContent = missing.length === 0 ? '' :
        `Tasks kept in ${missing.length === 1 ? 'region' : 'regions'} ${missing.join(', ')} are not shown: ${missing.length === 1 ? 'it cannot' : 'they cannot'} be reached right now.`;
      if (!append) { rows.clear(); list.replaceChildren(); }
      res.task_runs.forEach((r) => list.appendChild(row(r)));
      cursor = res.next_cursor || '';
      more.hidden = !cursor;
      summary.textContent = rows.size === 0 ? 'No tasks match.' : `${rows.size} task${rows.size === 1 ? '' : 's'} shown.`;
    } catch (err) {
      error.show(`The tasks could not be loaded. ${explain(err)}`);
    }
  }

  function follow() {
    if (live) live.stop();
    const f = filter();
    const q = { type: runEvents };
    if (f.agent) q.agent_id = f.agent;
    live = new Live(q, {
      onEvent: (ev) => {
        const run = ev.data;
        if (!run || !run.task_run_id) return;
        if (rows.has(run.task_run_id)) { row(run); return; }
        const cur = filter();
        if (ev.type.endsWith('.task_run.created') && (!cur.status || cur.status === run.status)) {
          list.prepend(row(run));
          summary.textContent = `${rows.size} task${rows.size === 1 ? '' : 's'} shown.`;
        }
      },
      onReconnect: () => load(false),
      onSignedOut: () => nav.signedOut(),
    });
  }

  function changed() {
    const f = filter();
    const q = new URLSearchParams();
    if (f.agent) q.set('agent', f.agent);
    if (f.status) q.set('status', f.status);
    history.replaceState(null, '', `/tasks${q.toString() ? `?${q}` : ''}`);
    cursor = '';
    follow();
    load(false);
  }
  agentField.control.addEventListener('change', changed);
  statusField.control.addEventListener('change', changed);
  more.addEventListener('click', () => load(true));

  follow();
  await load(false);
  return { dispose: () => live && live.stop() };
}
