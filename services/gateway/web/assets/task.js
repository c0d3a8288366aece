// One task run: live status, progress as it arrives, the answer, artifacts,
// the delegation it is part of, and cancelling.

import { api, explain } from './api.js';
import { h, replace, formError, announce, notFoundView } from './dom.js';
import { Live } from './live.js';
import { runText, conversation, excerpt, time, terminal, statusLabel, runErrorText, usageText } from './format.js';
import { statusBadge, ProgressLog, runResult } from './runview.js';
import { renderMarkdown } from './markdown.js';

export async function taskView(main, { id: runId }, nav) {
  let run;
  try {
    run = await api('GET', `/task-runs/${encodeURIComponent(runId)}`);
  } catch (err) {
    return notFoundView(main, 'Task not found', explain(err), h('a', { href: '/tasks' }, 'All tasks'));
  }
  let agentName = '';
  try { agentName = (await api('GET', `/agent-accounts/${encodeURIComponent(run.target_agent_id)}`)).name; } catch { agentName = ''; }

  const log = new ProgressLog();
  const badge = h('span', { id: 'task-status' });
  const meta = h('dl', { class: 'meta' });
  const progress = h('div', { id: 'task-progress' });
  const result = h('div', { id: 'task-result' });
  const cancelError = formError();
  const cancel = h('button', { type: 'button', class: 'danger', id: 'cancel-task' }, 'Cancel task');
  const cancelRow = h('div', { class: 'row' }, cancel);
  // A run waiting for input: the agent's question is its result so far, and
  // a person answers here; the same run then goes back to the agent.
  const replyError = formError();
  const replyText = h('textarea', { id: 'task-reply-text', name: 'text', rows: 3, required: true });
  const replySend = h('button', { type: 'submit' }, 'Send answer');
  const reply = h('form', { id: 'task-reply', hidden: true },
    h('label', { for: 'task-reply-text' }, 'Your answer'),
    h('p', { class: 'hint', id: 'task-reply-hint' }, 'The agent is waiting for it; the task goes on with your answer.'),
    replyText, h('div', { class: 'row' }, replySend), replyError.el);
  replyText.setAttribute('aria-describedby', 'task-reply-hint');
  // A run waiting for approval: its host asks to take a step (a tool
  // call); the owner allows or denies it here.
  const approvalError = formError();
  const approvalStep = h('div', { id: 'task-approval-step' });
  const approveButton = h('button', { type: 'button', id: 'approve-step' }, 'Allow');
  const denyButton = h('button', { type: 'button', class: 'danger', id: 'deny-step' }, 'Deny');
  const approval = h('section', { class: 'panel', id: 'task-approval', 'aria-labelledby': 'approval-title', hidden: true },
    h('h2', { id: 'approval-title' }, 'Approval needed'),
    approvalStep,
    h('div', { class: 'row' }, approveButton, denyButton), approvalError.el);
  const askedTitle = h('h2', { id: 'asked-title' }, 'Asked');
  const asked = h('div', { id: 'task-conversation' });
  const traceBox = h('div', { id: 'task-trace' });
  const traceSection = h('section', { class: 'panel', 'aria-labelledby': 'trace-title', hidden: true },
    h('h2', { id: 'trace-title' }, 'Delegation'),
    h('p', { class: 'hint' }, 'A routing rule handed this task on to another agent (or this task came from one). Each line is one agent\'s run, from the task that started it all.'),
    traceBox);

  document.title = `Task: ${excerpt(runText(run), 40)} · A2A Mesh`;
  replace(main,
    h('p', { class: 'small' }, h('a', { href: `/agents/${run.target_agent_id}` }, `‹ ${agentName || 'The agent'}`), ' · ', h('a', { href: '/tasks' }, 'All tasks')),
    h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, 'Task'), badge),
    approval,
    h('section', { class: 'panel', 'aria-labelledby': 'asked-title' },
      askedTitle,
      asked,
      meta,
      cancelRow, cancelError.el),
    h('section', { class: 'panel', 'aria-labelledby': 'progress-title' },
      h('h2', { id: 'progress-title' }, 'Progress'), progress),
    traceSection,
    h('section', { class: 'panel', 'aria-labelledby': 'result-title' },
      h('h2', { id: 'result-title' }, 'Result'), result, reply));

  // renderAsked shows what the run was asked: the request, and once the
  // agent has asked for more, every turn since, in order.
  let shownTurns = 0;
  function renderAsked() {
    const turns = conversation(run);
    if (turns.length === shownTurns) return;
    shownTurns = turns.length;
    askedTitle.textContent = turns.length > 1 ? 'Conversation' : 'Asked';
    replace(asked, turns.length === 1
      ? h('div', { class: 'output' }, renderMarkdown(turns[0].text))
      : h('ol', { class: 'turns', 'aria-labelledby': 'asked-title' }, turns.map((turn, i) =>
        h('li', { class: `turn ${turn.role}` },
          h('p', { class: 'small turn-who' }, turnLabel(turn, i)),
          h('div', { class: 'output' }, renderMarkdown(turn.text))))));
  }

  function render() {
    replace(badge, statusBadge(run.status));
    renderAsked();
    replace(meta,
      h('dt', {}, 'Agent'), h('dd', {}, h('a', { href: `/agents/${run.target_agent_id}` }, agentName || run.target_agent_id)),
      h('dt', {}, 'Created'), h('dd', {}, time(run.created_at)),
      run.ended_at ? [h('dt', {}, 'Ended'), h('dd', {}, time(run.ended_at))] : null,
      run.attempt > 1 ? [h('dt', {}, 'Attempt'), h('dd', {}, `${run.attempt} of ${run.max_attempts}`)] : null,
      run.usage ? [h('dt', {}, 'Spent'), h('dd', { id: 'task-usage' }, usageText(run.usage))] : null,
      run.usage_total && JSON.stringify(run.usage_total) !== JSON.stringify(run.usage)
        ? [h('dt', {}, 'With delegated tasks'), h('dd', { id: 'task-usage-total' }, usageText(run.usage_total))] : null,
      h('dt', {}, 'Task id'), h('dd', { class: 'mono ids' }, run.task_run_id));
    log.add(run);
    const [list, bar] = log.render(true, run.status);
    replace(progress,
      log.messages.length === 0
        ? h('p', { class: 'muted progress-log full' }, terminal(run.status) ? 'No progress was reported.' : `${statusLabel(run.status)}: no progress reported yet.`)
        : list,
      bar);
    const parts = runResult(run);
    const asking = run.status === 'input-required';
    replace(result, terminal(run.status)
      ? (parts.length ? parts : h('p', { class: 'muted' }, 'The agent returned no text.'))
      : asking
        ? [h('p', { class: 'small' }, 'The agent asks:'), parts]
        : h('p', { class: 'muted' }, 'The result appears here when the agent finishes.'));
    reply.hidden = !asking;
    cancelRow.hidden = terminal(run.status);
    renderApproval();
  }

  function renderApproval() {
    const step = run.status === 'approval-required' ? run.pending_approval : null;
    approval.hidden = !step;
    if (!step) return;
    replace(approvalStep,
      h('p', {}, 'The agent\'s host asks to use ', h('strong', { class: 'mono' }, step.tool),
        step.rule ? ` (rule ${step.rule})` : '', '. Denied by itself at ', time(step.expires_at), ' if nobody decides.'),
      h('pre', { class: 'output mono', id: 'task-approval-input' }, JSON.stringify(step.input ?? {}, null, 2)));
  }

  async function decide(decision) {
    approvalError.clear();
    approveButton.disabled = denyButton.disabled = true;
    try {
      update(await api('POST', `/task-runs/${encodeURIComponent(runId)}/approval`, { decision }));
      announce(decision === 'allow' ? 'Allowed; the task goes on.' : 'Denied; the task goes on without it.');
    } catch (err) {
      approvalError.show(`The decision was not recorded. ${explain(err)}`);
    } finally {
      approveButton.disabled = denyButton.disabled = false;
    }
  }
  approveButton.addEventListener('click', () => decide('allow'));
  denyButton.addEventListener('click', () => decide('deny'));

  // ---- delegation trace ----

  function duration(ms) {
    if (typeof ms !== 'number') return '';
    return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
  }

  function hop(node) {
    const here = node.task_run_id === runId;
    const who = node.partner_id
      ? `Partner platform ${node.partner_id}`
      : (node.agent_name || node.agent_id || 'An agent');
    const label = here || !node.task_run_id
      ? h('span', { class: 'hop-agent' }, who, here ? ' (this task)' : '')
      : h('a', { class: 'hop-agent', href: `/tasks/${node.task_run_id}` }, who);
    const facts = [
      duration(node.duration_ms),
      node.created_at ? `asked ${time(node.created_at)}` : '',
      node.remote_task_id ? `remote task ${node.remote_task_id}` : '',
      node.usage ? `spent ${usageText(node.usage)}` : '',
    ].filter(Boolean).join(' · ');
    return h('li', { dataset: { taskRunId: node.task_run_id || '' } },
      h('div', { class: 'hop', 'aria-current': here ? 'page' : null },
        statusBadge(node.status), label,
        facts ? h('span', { class: 'muted small' }, facts) : null),
      node.error ? h('p', { class: 'small form-error' }, runErrorText(node.error)) : null,
      (node.children || []).length ? h('ul', {}, node.children.map(hop)) : null);
  }

  // loadTrace reads the tree again; a call while a read is under way reads
  // once more after it, so the last change is always shown.
  let traceBusy = false;
  let traceAgain = false;
  // A run that hands tasks to other agents from inside its work has no
  // mark of it on its record: its tree is read too, and shown once it has
  // a branch.
  async function loadTrace() {
    const linked = run.parent_task_run_id || run.delegated_to;
    if (traceBusy) { traceAgain = true; return; }
    traceBusy = true;
    do {
      traceAgain = false;
      try {
        const tree = await api('GET', `/task-runs/${encodeURIComponent(runId)}/trace`);
        if (linked || (tree.children || []).length) {
          replace(traceBox, h('ul', { class: 'trace', 'aria-label': 'Delegation tree' }, hop(tree)));
          traceSection.hidden = false;
        }
      } catch (err) {
        if (linked) {
          replace(traceBox, h('p', { class: 'form-error' }, `The delegation could not be loaded. ${explain(err)}`));
          traceSection.hidden = false;
        }
      }
    } while (traceAgain);
    traceBusy = false;
  }

  function update(next) {
    if (!next || next.task_run_id !== runId) return;
    // Each event carries that moment's progress: keep every message, also
    // from events older than the run already shown.
    const added = log.add(next);
    if ((next.revision || 0) < (run.revision || 0)) {
      if (added) render();
      return;
    }
    const wasDone = terminal(run.status);
    const statusChanged = next.status !== run.status || !!next.delegated_to !== !!run.delegated_to;
    run = next;
    render();
    // A delegating run mirrors its delegate's progress, so news of it is
    // also news of the tree.
    if (statusChanged || added) loadTrace();
    if (!wasDone && terminal(run.status)) announce(`Task ${statusLabel(run.status).toLowerCase()}.`);
  }

  reply.addEventListener('submit', async (event) => {
    event.preventDefault();
    replyError.clear();
    const text = replyText.value.trim();
    if (!text) {
      replyError.show('Write an answer first.');
      replyText.focus();
      return;
    }
    replySend.disabled = true;
    try {
      update(await api('POST', `/task-runs/${encodeURIComponent(runId)}/input`, { text }));
      replyText.value = '';
      announce('Answer sent; the task goes on.');
    } catch (err) {
      replyError.show(`The answer was not sent. ${explain(err)}`);
    } finally {
      replySend.disabled = false;
    }
  });

  cancel.addEventListener('click', async () => {
    cancelError.clear();
    cancel.disabled = true;
    try {
      update(await api('POST', `/task-runs/${encodeURIComponent(runId)}/cancel`, { reason: 'Canceled from the web page' }));
    } catch (err) {
      cancelError.show(`The task was not canceled. ${explain(err)}`);
    } finally {
      cancel.disabled = false;
    }
  });

  render();
  loadTrace();
  // The stream starts at the run's creation, so the progress reported
  // before this page opened is shown too, then everything new.
  const since = new Date(new Date(run.created_at).getTime() - 1000).toISOString();
  const live = new Live({ task_run_id: runId, since }, {
    onEvent: (ev) => {
      if (ev.type.includes('.task_run.')) update(ev.data);
      else if (ev.type.includes('.artifact.') && !terminal(run.status)) refresh();
    },
    onReconnect: refresh,
    onSignedOut: () => nav.signedOut(),
  });

  async function refresh() {
    try { update(await api('GET', `/task-runs/${encodeURIComponent(runId)}`)); } catch { /* shown as it was */ }
    loadTrace();
  }

  return { dispose: () => live.stop() };
}

// turnLabel names a turn of the conversation by who said it and why.
function turnLabel(turn, i) {
  if (turn.role === 'agent') return 'The agent asked';
  return i === 0 ? 'The request' : 'The answer';
}
