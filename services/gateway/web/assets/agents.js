// The agents list: every agent with a live online/offline dot, its host and
// device, and the form that creates one.

import { api, explain } from './api.js';
import { h, replace, announce } from './dom.js';
import { Live } from './live.js';
import { agentForm } from './agentform.js';
import { presence, presenceLine } from './presence.js';

export async function agentsView(main, _params, nav) {
  document.title = 'Agents · A2A Mesh';
  const list = h('ul', { class: 'cards', 'aria-label': 'Agents' });
  const listError = h('p', { class: 'form-error', role: 'alert', hidden: true });
  const formPanel = h('section', { class: 'panel narrow', id: 'new-agent', 'aria-labelledby': 'new-agent-title', hidden: true });
  const newButton = h('button', { type: 'button', class: 'primary', 'aria-expanded': 'false', 'aria-controls': 'new-agent' }, 'New agent');
  const cards = new Map();

  const closeForm = () => {
    formPanel.hidden = true;
    newButton.setAttribute('aria-expanded', 'false');
    newButton.focus();
  };
  newButton.addEventListener('click', () => {
    if (!formPanel.hidden) { closeForm(); return; }
    replace(formPanel,
      h('h2', { id: 'new-agent-title' }, 'New agent'),
      agentForm({
        submitLabel: 'Create agent',
        onSubmit: async (body) => {
          const agent = await api('POST', '/agent-accounts', body);
          announce(`Agent ${agent.name} created.`);
          nav(`/agents/${agent.agent_id}`);
        },
        onCancel: closeForm,
      }));
    formPanel.hidden = false;
    newButton.setAttribute('aria-expanded', 'true');
    formPanel.querySelector('input').focus();
  });

  replace(main,
    h('div', { class: 'page-head' },
      h('h1', { tabindex: '-1' }, 'Agents'),
      newButton),
    h('p', { class: 'lede' }, 'Agents run on your own machines. Connect one with a one-time code, then give it work from here.'),
    formPanel,
    listError,
    list);

  function card(agent) {
    let c = cards.get(agent.agent_id);
    if (!c) {
      c = { li: h('li', { class: 'card', dataset: { agentId: agent.agent_id } }), runtimes: null };
      cards.set(agent.agent_id, c);
    }
    c.agent = agent;
    const state = presence(c.runtimes);
    replace(c.li,
      h('h2', {}, h('a', { href: `/agents/${agent.agent_id}` }, agent.name)),
      presenceLine(state, c.runtimes === null),
      agent.description ? h('p', { class: 'muted' }, agent.description) : null);
    return c.li;
  }

  async function loadRuntimes(agentId) {
    const c = cards.get(agentId);
    if (!c) return;
    try {
      c.runtimes = (await api('GET', `/agent-accounts/${agentId}/runtimes`)).runtimes || [];
    } catch {
      c.runtimes = c.runtimes || [];
    }
    card(c.agent);
  }

  async function load() {
    try {
      const { agents } = await api('GET', '/agent-accounts');
      listError.hidden = true;
      agents.sort((a, b) => a.name.localeCompare(b.name));
      if (agents.length === 0) {
        replace(list, h('li', { class: 'card' },
          h('h2', {}, 'No agents yet'),
          h('p', {}, 'Create an agent, then connect it from the machine where it runs.')));
        return;
      }
      replace(list, agents.map(card));
      await Promise.all(agents.map((a) => loadRuntimes(a.agent_id)));
    } catch (err) {
      listError.textContent = `The agents could not be loaded. ${explain(err)}`;
      listError.hidden = false;
    }
  }

  const live = new Live({ type: 'agent.created,agent.updated,runtime.attached,runtime.online,runtime.offline,runtime.revoked' }, {
    onEvent: (ev) => {
      const agentId = ev.agentid || (ev.data && ev.data.agent_id);
      if (ev.type.endsWith('.agent.created') || ev.type.endsWith('.agent.updated')) {
        if (!cards.has(ev.data.agent_id)) { load(); return; }
        card(ev.data);
        return;
      }
      if (agentId && cards.has(agentId)) loadRuntimes(agentId);
    },
    onReconnect: load,
    onSignedOut: () => nav.signedOut(),
  });

  await load();
  return { dispose: () => live.stop() };
}
