// One agent: whether it is online and where it runs, connecting it with a
// one-time code, giving it work in a chat, how A2A clients reach it, which
// tasks it hands on to other agents, and its details.

import { api, explain, session } from './api.js';
import { h, replace, field, formError, copyButton, confirmButton, announce, notFoundView } from './dom.js';
import { Live } from './live.js';
import { agentForm } from './agentform.js';
import { presence, presenceLine } from './presence.js';
import { connectionInstructions } from './instructions.js';
import { hosts, countdown, time, runText, conversation, terminal, statusLabel } from './format.js';
import { statusBadge, ProgressLog, runResult } from './runview.js';
import { renderMarkdown } from './markdown.js';
import { a2aSection } from './a2a.js';
import { rulesSection } from './rules.js';
import { usageSection } from './usage.js';

export async function agentView(main, { id: agentId }, nav) {
  let agent;
  try {
    agent = await api('GET', `/agent-accounts/${encodeURIComponent(agentId)}`);
  } catch (err) {
    return notFoundView(main, 'Agent not found', explain(err), h('a', { href: '/' }, 'Back to the agents'));
  }
  let runtimes = null;
  const title = h('h1', { tabindex: '-1' });
  const lede = h('p', { class: 'lede' });
  const presenceBox = h('div', { class: 'agent-presence' }, presenceLine(null, true));
  const connect = connectSection();
  const work = workSection();
  const details = detailsSection();
  const a2a = a2aSection(agentId);
  const rules = rulesSection(agentId);
  rules.changed(agent);
  const usage = usageSection(agentId);
  usage.changed(agent);

  function renderHead() {
    document.title = `${agent.name} · A2A Mesh`;
    title.textContent = agent.name;
    lede.textContent = agent.description || '';
    lede.hidden = !agent.description;
  }
  renderHead();
  replace(main,
    h('p', { class: 'small' }, h('a', { href: '/' }, '‹ All agents')),
    h('div', { class: 'page-head' }, title),
    lede,
    presenceBox,
    connect.el,
    work.el,
    a2a.el,
    rules.el,
    usage.el,
    details.el);

  async function loadRuntimes() {
    try {
      runtimes = (await api('GET', `/agent-accounts/${encodeURIComponent(agentId)}/runtimes`)).runtimes || [];
    } catch {
      runtimes = runtimes || [];
    }
    const state = presence(runtimes);
    replace(presenceBox, presenceLine(state));
    connect.update(state);
  }

  // ---- connecting ----

  function connectSection() {
    const heading = h('h2', { id: 'connect-title' }, 'Connect this agent');
    const status = h('div', { class: 'connection-status' });
    const guidance = h('p', { class: 'muted', hidden: true },
      'A machine that already has this agent\'s connection reconnects by itself with ', h('code', {}, 'a2a-runtime start'),
      ': no code needed. For a new machine, or when the runtime says its credential was revoked, generate a new code for this same agent. Never create a new agent to fix a connection.');
    const host = field({
      label: 'Agent host on that machine', name: 'host_type', kind: 'select', value: 'claude_cli',
      options: hosts.map((x) => [x.type, x.label]),
      hint: 'Which program does the work: it decides how the instructions start the local adapter.',
    });
    const generate = h('button', { type: 'button', class: 'primary', id: 'generate-code' }, 'Generate connection code');
    const error = formError();
    const codeArea = h('div', { class: 'code-area', hidden: true });
    const body = h('div', { id: 'connect-body', class: 'stack' }, guidance, host.wrap, h('div', { class: 'row' }, generate), error.el, codeArea);
    // A connected agent keeps the code generator folded away until asked.
    const more = h('button', { type: 'button', class: 'small', 'aria-expanded': 'false', 'aria-controls': 'connect-body', hidden: true },
      'Reconnect or move to another machine');
    let unfolded = false;
    more.addEventListener('click', () => {
      unfolded = !unfolded;
      more.setAttribute('aria-expanded', String(unfolded));
      body.hidden = !unfolded;
      if (unfolded) host.control.focus();
    });
    const el = h('section', { class: 'panel', id: 'connect', 'aria-labelledby': 'connect-title' },
      heading, status, more, body);

    let code = null;
    let timer = null;
    const codeText = h('span', { class: 'pairing-code', id: 'pairing-code' });
    const clock = h('span', { class: 'countdown muted', role: 'timer' });
    const codeStatus = h('p', { class: 'notice', id: 'code-status', role: 'status' });
    const instructions = h('pre', { class: 'instructions', id: 'instructions', tabindex: '0', 'aria-labelledby': 'instructions-title' });

    function instructionsText() {
      return connectionInstructions({
        agent, code: code.pairing_token, expiresAt: code.expires_at, apiBase: session.apiBase, hostType: host.control.value,
      });
    }

    function tick() {
      if (!code) return;
      if (new Date(code.expires_at).getTime() <= Date.now()) {
        expire();
        return;
      }
      clock.textContent = `Expires in ${countdown(code.expires_at)}`;
    }

    function stopClock() {
      clearInterval(timer);
      timer = null;
    }

    function expire() {
      stopClock();
      if (!code || code.state !== 'waiting') return;
      code.state = 'expired';
      clock.textContent = 'Expired';
      codeStatus.className = 'form-error';
      codeStatus.textContent = 'This code expired before a runtime used it. Generate a new one.';
    }

    generate.addEventListener('click', async () => {
      error.clear();
      generate.disabled = true;
      try {
        const issued = await api('POST', `/agent-accounts/${encodeURIComponent(agentId)}/pairing-codes`, {});
        code = { ...issued, state: 'waiting' };
        codeText.textContent = code.pairing_token;
        codeStatus.className = 'notice';
        codeStatus.textContent = 'Waiting for the runtime on that machine to pair with this code…';
        instructions.textContent = instructionsText();
        replace(codeArea,
          h('h3', {}, 'Connection code'),
          h('div', { class: 'code-box' }, codeText, copyButton('Copy code', () => code.pairing_token), clock),
          codeStatus,
          h('h3', { id: 'instructions-title' }, 'Instructions for your AI assistant'),
          h('p', { class: 'hint' }, 'Paste these into the AI assistant (Claude Code, Codex…) on the machine where the agent should run. It installs the runtime and the adapter, pairs with this code and starts them. The code works once.'),
          instructions,
          copyButton('Copy instructions', () => instructions.textContent));
        codeArea.hidden = false;
        stopClock();
        tick();
        timer = setInterval(tick, 1000);
        generate.textContent = 'Generate a new code';
        announce('Connection code generated.');
      } catch (err) {
        error.show(`No code was generated. ${explain(err)}`);
      } finally {
        generate.disabled = false;
      }
    });
    host.control.addEventListener('change', () => {
      if (code) instructions.textContent = instructionsText();
    });

    return {
      el,
      // update shows the runtime's state; a code in use follows it.
      update(state) {
        const rt = state.runtime;
        heading.textContent = state.status === 'never' ? 'Connect this agent' : 'Connection';
        guidance.hidden = state.status === 'never';
        const connected = rt && state.status !== 'disconnected';
        more.hidden = !connected || code !== null;
        body.hidden = connected && code === null && !unfolded;
        if (connected) {
          const disconnectError = formError();
          replace(status,
            h('p', {}, `Connected from ${rt.device_name || 'an unnamed machine'} (${rt.host_label || 'Custom Agent'}) since ${time(rt.attached_at)}.`),
            h('div', { class: 'row spaced' }, confirmButton('Disconnect this machine', 'Click again to disconnect', async () => {
              try {
                await api('POST', `/agent-runtimes/${encodeURIComponent(rt.runtime_id)}/revoke`);
                announce('The machine was disconnected.');
                await loadRuntimes();
              } catch (err) {
                disconnectError.show(`The machine was not disconnected. ${explain(err)}`);
              }
            })),
            disconnectError.el);
        } else {
          replace(status, h('p', {}, state.status === 'never'
            ? 'Generate a one-time code, then hand the instructions to the AI assistant on the machine where this agent runs.'
            : 'No machine is connected. Generate a new code for this same agent to connect one.'));
        }
        if (code && code.state === 'used' && state.status === 'online') {
          code.state = 'online';
          codeStatus.className = 'notice ok';
          codeStatus.textContent = `Connected: the agent is online on ${rt.device_name || 'its machine'}.`;
          announce('The agent is online.');
        }
      },
      redeemed(codeId) {
        if (!code || code.code_id !== codeId || code.state !== 'waiting') return;
        code.state = 'used';
        stopClock();
        clock.textContent = 'Used';
        codeStatus.className = 'notice';
        codeStatus.textContent = 'Code used: the runtime paired. Waiting for it to come online…';
      },
      expired(codeId) {
        if (code && code.code_id === codeId) expire();
      },
      dispose: stopClock,
    };
  }

  // ---- work ----

  function workSection() {
    const thread = h('ol', { class: 'thread', 'aria-label': 'Tasks sent to this agent' });
    const empty = h('p', { class: 'muted' }, 'No tasks yet. Ask the agent something below.');
    const message = field({ label: `Message to ${agent.name}`, name: 'input', kind: 'textarea', hint: 'Ctrl+Enter sends.' });
    const send = h('button', { type: 'submit', class: 'primary' }, 'Send');
    const conversationNote = h('span', { class: 'muted small' });
    const newConversation = h('button', { type: 'button', class: 'small', hidden: true }, 'Start a new conversation');
    const error = formError();
    const form = h('form', { class: 'composer', novalidate: true }, message.wrap, error.el,
      h('div', { class: 'row' }, send, newConversation, conversationNote));
    const el = h('section', { class: 'panel', id: 'work', 'aria-labelledby': 'work-title' },
      h('h2', { id: 'work-title' }, 'Work'), empty, thread, form);
    const runs = new Map();
    let conversationId = '';

    function setConversation(cid) {
      conversationId = cid;
      newConversation.hidden = !cid;
      conversationNote.textContent = cid ? 'Your next message continues this conversation.' : '';
    }
    newConversation.addEventListener('click', () => { setConversation(''); message.control.focus(); });

    function render(entry) {
      const { run } = entry;
      renderTurns(entry);
      replace(entry.reply,
        h('div', { class: 'msg-head' },
          statusBadge(run.status),
          h('a', { href: `/tasks/${run.task_run_id}`, class: 'small', 'aria-label': `Open task: ${runText(run).slice(0, 60)}` }, 'Open task'),
          h('span', { class: 'muted small' }, time(run.created_at))),
        entry.log.render(false, run.status),
        terminal(run.status) ? runResult(run) : null,
        run.status === 'input-required' ? [h('p', { class: 'small' }, 'The agent asks:'), runResult(run)] : null);
      empty.hidden = runs.size > 0;
      const asking = waitingEntry();
      conversationNote.textContent = asking
        ? 'The agent is waiting for your answer: your next message answers it.'
        : (conversationId ? 'Your next message continues this conversation.' : '');
    }

    // waitingEntry is the newest run of this conversation that waits for an
    // answer: a message then answers it instead of starting a new task.
    function waitingEntry() {
      for (const entry of [...runs.values()].reverse()) {
        if (entry.run.status === 'input-required' && (!conversationId || entry.run.conversation_id === conversationId)) return entry;
      }
      return null;
    }

    // renderTurns shows the run's conversation before its reply: the
    // request, then each earlier question of the agent and its answer.
    // A new turn starts the progress afresh.
    function renderTurns(entry) {
      const turns = conversation(entry.run);
      const key = JSON.stringify(turns);
      if (key === entry.turnsKey) return;
      if (entry.turnsKey) {
        entry.log = new ProgressLog();
        entry.log.add(entry.run);
      }
      entry.turnsKey = key;
      const id = entry.run.task_run_id;
      const next = turns.map((turn) => (turn.role === 'agent'
        ? h('li', { class: 'msg agent asked', dataset: { taskRunId: id } },
          h('p', { class: 'small' }, 'The agent asked:'), renderMarkdown(turn.text))
        : h('li', { class: 'msg user', dataset: { taskRunId: id } }, h('p', {}, turn.text))));
      entry.turns.forEach((li) => li.remove());
      entry.turns = next;
      entry.reply.before(...next);
    }

    function upsert(run) {
      let entry = runs.get(run.task_run_id);
      if (!entry) {
        entry = {
          run, log: new ProgressLog(), turns: [], turnsKey: '',
          reply: h('li', { class: 'msg agent', dataset: { taskRunId: run.task_run_id }, 'aria-label': `Reply to: ${runText(run).slice(0, 60)}` }),
        };
        runs.set(run.task_run_id, entry);
        thread.append(entry.reply);
      } else if ((run.revision || 0) < (entry.run.revision || 0)) {
        if (entry.log.add(run)) render(entry);
        return;
      }
      const wasDone = terminal(entry.run.status);
      entry.run = run;
      entry.log.add(run);
      render(entry);
      if (!wasDone && terminal(run.status)) announce(`${agent.name}: task ${statusLabel(run.status).toLowerCase()}.`);
    }

    async function load() {
      try {
        const { task_runs: list } = await api('GET', `/task-runs?agent_id=${encodeURIComponent(agentId)}&limit=10`);
        list.reverse().forEach(upsert);
        // Runs shown but no longer in the newest ten still change.
        const listed = new Set(list.map((r) => r.task_run_id));
        await Promise.all([...runs.keys()].filter((k) => !listed.has(k)).map(async (k) => {
          try { upsert(await api('GET', `/task-runs/${k}`)); } catch { /* shown as it was */ }
        }));
      } catch (err) {
        error.show(`The recent tasks could not be loaded. ${explain(err)}`);
      }
      empty.hidden = runs.size > 0;
    }

    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      error.clear();
      const text = message.control.value.trim();
      if (!text) {
        error.show('Write a message for the agent first.');
        message.control.focus();
        return;
      }
      const asking = waitingEntry();
      const body = { target_agent_id: agentId, input: { text } };
      if (conversationId) body.conversation_id = conversationId;
      send.disabled = true;
      try {
        if (asking) {
          const run = await api('POST', `/task-runs/${encodeURIComponent(asking.run.task_run_id)}/input`, { text });
          message.control.value = '';
          setConversation(run.conversation_id);
          upsert(run);
          // The answered run moves to the end of the thread, its
          // conversation (now with the answer) before its reply.
          thread.append(...asking.turns, asking.reply);
          announce('Answer sent.');
          return;
        }
        const run = await api('POST', '/task-runs', body);
        message.control.value = '';
        setConversation(run.conversation_id);
        upsert(run);
        announce('Task sent.');
      } catch (err) {
        error.show(`${asking ? 'The answer' : 'The task'} was not sent. ${explain(err)}`);
      } finally {
        send.disabled = false;
        message.control.focus();
      }
    });
    message.control.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    return { el, load, upsert };
  }

  // ---- details ----

  function detailsSection() {
    const body = h('div');
    const edit = h('button', { type: 'button', 'aria-expanded': 'false' }, 'Edit');
    const el = h('section', { class: 'panel', id: 'details', 'aria-labelledby': 'details-title' },
      h('div', { class: 'page-head' }, h('h2', { id: 'details-title' }, 'Details'), edit), body);
    let editing = false;

    function show() {
      editing = false;
      edit.hidden = false;
      edit.setAttribute('aria-expanded', 'false');
      const skills = agent.skills || [];
      replace(body, h('dl', { class: 'meta' },
        h('dt', {}, 'Agent id'), h('dd', { class: 'mono ids' }, agent.agent_id),
        h('dt', {}, 'Home region'), h('dd', { class: 'mono' }, agent.home_region || '—'),
        h('dt', {}, 'Description'), h('dd', {}, agent.description || '—'),
        h('dt', {}, 'Instructions'), h('dd', {}, agent.instructions ? h('pre', {}, agent.instructions) : '—'),
        h('dt', {}, 'Skills'), h('dd', {}, skills.length
          ? h('ul', {}, skills.map((s) => h('li', {}, h('strong', {}, s.name), s.description ? ` — ${s.description}` : '')))
          : '—'),
        h('dt', {}, 'May delegate to'), h('dd', { id: 'delegates' }, delegates()),
        h('dt', {}, 'Created'), h('dd', {}, time(agent.created_at))),
      deleteZone());
      nameDelegates();
    }

    // delegates is who the agent may hand tasks to from inside its work
    // (its delegation policy, set through the API), each a link to its page.
    function delegates() {
      const policy = agent.delegation || {};
      const ids = policy.agents || [];
      if (!ids.length && !policy.public) return 'No other agent';
      const items = ids.map((id) => h('li', {}, h('a', { href: `/agents/${encodeURIComponent(id)}`, 'data-agent-id': id }, id)));
      if (policy.public) items.push(h('li', {}, 'every public agent'));
      return h('ul', {}, items);
    }

    // nameDelegates replaces the ids of the delegates' links with their names.
    async function nameDelegates() {
      const links = body.querySelectorAll('#delegates a[data-agent-id]');
      if (!links.length) return;
      let names;
      try {
        const list = await api('GET', '/agent-accounts');
        names = new Map((list.agents || []).map((a) => [a.agent_id, a.name]));
      } catch { return; /* the ids stay */ }
      for (const a of links) {
        const name = names.get(a.dataset.agentId);
        if (name) a.textContent = name;
      }
    }

    // deleteZone deletes the agent after a second click: its machines are
    // disconnected and its unfinished tasks canceled; its history stays.
    function deleteZone() {
      const error = formError();
      return h('div', { class: 'delete-agent' },
        h('p', { class: 'small' }, 'Deleting this agent disconnects its machines and cancels its unfinished tasks. Its finished tasks, files and events stay.'),
        h('div', { class: 'row spaced' }, confirmButton('Delete this agent', 'Click again to delete it', async () => {
          try {
            const done = await api('DELETE', `/agent-accounts/${encodeURIComponent(agentId)}`);
            announce(`${agent.name} was deleted: ${done.revoked_runtimes} machine(s) disconnected, ${done.canceled_task_runs} task(s) canceled.`);
            nav('/');
          } catch (err) {
            error.show(`The agent was not deleted. ${explain(err)}`);
          }
        })),
        error.el);
    }

    edit.addEventListener('click', () => {
      editing = true;
      edit.hidden = true;
      replace(body, agentForm({
        agent,
        submitLabel: 'Save changes',
        onSubmit: async (changes) => {
          agent = await api('PATCH', `/agent-accounts/${encodeURIComponent(agentId)}`, changes);
          renderHead();
          show();
          announce('Changes saved.');
          edit.focus();
        },
        onCancel: () => { show(); edit.focus(); },
      }));
      body.querySelector('input').focus();
    });
    show();
    return {
      el,
      changed(next) {
        agent = next;
        renderHead();
        if (!editing) show();
      },
    };
  }

  // ---- live ----

  const live = new Live({ agent_id: agentId }, {
    onEvent: (ev) => {
      const kind = ev.type.replace(/^dev\.a2amesh\./, '');
      if (kind.startsWith('runtime.')) loadRuntimes();
      else if (kind === 'pairing_code.redeemed') connect.redeemed(ev.data.code_id);
      else if (kind === 'pairing_code.expired') connect.expired(ev.data.code_id);
      else if (kind === 'agent.updated') { details.changed(ev.data); a2a.changed(); rules.changed(ev.data); usage.changed(ev.data); }
      else if (kind === 'agent.budget_exceeded') { usage.load(); announce(ev.data.message); }
      else if (kind.startsWith('task_run.')) {
        work.upsert(ev.data);
        if (kind === 'task_run.usage') usage.load();
      }
    },
    onReconnect: async () => {
      try { details.changed(await api('GET', `/agent-accounts/${encodeURIComponent(agentId)}`)); } catch { /* kept */ }
      await Promise.all([loadRuntimes(), work.load(), a2a.load(), rules.load(), usage.load()]);
    },
    onSignedOut: () => nav.signedOut(),
  });

  await Promise.all([loadRuntimes(), work.load(), a2a.load(), rules.load(), usage.load()]);
  return { dispose() { live.stop(); connect.dispose(); } };
}
