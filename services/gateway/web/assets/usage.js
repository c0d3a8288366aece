// What an agent's runs spent, per day, and the budget that limits it.

import { api, explain } from './api.js';
import { h, replace } from './dom.js';
import { usageText, limitText } from './format.js';

export function usageSection(agentId) {
  const budget = h('p', { id: 'budget', class: 'small' });
  const body = h('div', { id: 'usage-days' });
  const el = h('section', { class: 'panel', id: 'usage', 'aria-labelledby': 'usage-title' },
    h('h2', { id: 'usage-title' }, 'Usage'),
    h('p', { class: 'hint' }, 'What the agent\'s host reported spending, per day (UTC) of the tasks\' creation.'),
    budget, body);

  function changed(agent) {
    const b = agent.budget || {};
    const limits = [
      b.per_run ? `${limitText(b.per_run)} per task` : '',
      b.per_day ? `${limitText(b.per_day)} per day` : '',
    ].filter(Boolean);
    budget.textContent = limits.length ? `Budget: ${limits.join(', ')}.` : 'No budget: the agent\'s tasks may spend without limit.';
  }

  async function load() {
    try {
      const { days } = await api('GET', `/usage?agent_id=${encodeURIComponent(agentId)}`);
      replace(body, days.length === 0
        ? h('p', { class: 'muted' }, 'No task has reported usage yet.')
        : h('table', {},
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Day'), h('th', { scope: 'col' }, 'Tasks'), h('th', { scope: 'col' }, 'Spent'))),
          h('tbody', {}, days.slice(-14).reverse().map((d) => h('tr', { dataset: { day: d.day } },
            h('td', {}, d.day), h('td', {}, String(d.runs)), h('td', {}, usageText(d)))))));
    } catch (err) {
      replace(body, h('p', { class: 'form-error' }, `The usage could not be loaded. ${explain(err)}`));
    }
  }

  return { el, load, changed };
}
