// An agent's routing rules: which of its tasks it hands on to another agent
// (or a partner platform), listed in the order they are tried, added and
// deleted here.

import { api, explain } from './api.js';
import { h, replace, field, formError, showFieldError, confirmButton, announce } from './dom.js';
import { time } from './format.js';

const kinds = [
  ['keywords', 'Its text contains a keyword'],
  ['regex', 'Its text matches a regular expression'],
  ['skill', 'It asks for a skill'],
];

function matchText(m) {
  if (m.keywords) return `text contains ${m.keywords.map((k) => `“${k}”`).join(' or ')}`;
  if (m.regex) return `text matches ${m.regex}`;
  if (m.skill) return `asks for the skill “${m.skill}”`;
  return 'unknown match';
}

export function rulesSection(agentId) {
  let agents = [];
  let partners = [];
  let skills = [];
  const list = h('ol', { class: 'rules', id: 'routing-rules', 'aria-label': 'Routing rules, in the order they are tried' });
  const listError = formError();

  const name = field({ label: 'Rule name', name: 'rule_name', hint: 'Optional: what the rule is for.' });
  const kind = field({ label: 'Hand on a task when', name: 'match_kind', kind: 'select', value: 'keywords', options: kinds });
  const value = field({ label: 'Keywords', name: 'match_value', hint: 'Separated by commas; any of them matches, ignoring case.' });
  const target = field({ label: 'To', name: 'target', kind: 'select', options: [] });
  const priority = field({ label: 'Priority', name: 'priority', type: 'number', value: '0', hint: 'Higher is tried first; among equal priorities, the older rule first.', attrs: { inputmode: 'numeric', step: '1' } });
  const formErr = formError();
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Add rule');
  const form = h('form', { class: 'stack', id: 'new-rule', novalidate: true, 'aria-labelledby': 'new-rule-title' },
    h('h3', { id: 'new-rule-title' }, 'New rule'),
    name.wrap, kind.wrap, value.wrap, target.wrap, priority.wrap, formErr.el,
    h('div', { class: 'row' }, submit));

  const el = h('section', { class: 'panel', id: 'rules', 'aria-labelledby': 'rules-title' },
    h('h2', { id: 'rules-title' }, 'Routing rules'),
    h('p', { class: 'muted' }, 'A task that matches a rule is handed on to another agent, which answers it in this agent\'s name; the first matching rule wins. Tasks that match no rule stay with this agent.'),
    list, listError.el, form);

  function describeKind() {
    const k = kind.control.value;
    const label = value.wrap.querySelector('label');
    const hint = value.wrap.querySelector('.hint');
    label.textContent = { keywords: 'Keywords', regex: 'Regular expression', skill: 'Skill' }[k];
    hint.textContent = {
      keywords: 'Separated by commas; any of them matches, ignoring case.',
      regex: 'RE2 syntax, e.g. (?i)^invoice #\\d+ — checked when you add the rule.',
      skill: skills.length ? `One of this agent's skills: ${skills.map((s) => s.id).join(', ')}.` : 'This agent lists no skills yet: add them in its details.',
    }[k];
    showFieldError(value, '');
  }
  kind.control.addEventListener('change', describeKind);

  function targetName(t) {
    if (t.agent_id) return (agents.find((a) => a.agent_id === t.agent_id) || {}).name || t.agent_id;
    const p = partners.find((x) => x.partner_id === t.partner_id);
    return `partner platform ${p ? p.name : t.partner_id}`;
  }

  function ruleItem(r) {
    const itemError = formError();
    return h('li', { class: 'card', dataset: { ruleId: r.rule_id } },
      h('h3', {}, r.name || `Rule ${matchText(r.match).slice(0, 40)}`),
      h('p', {}, `When its ${matchText(r.match)}, hand it to `, h('strong', {}, targetName(r.target)), '.'),
      h('p', { class: 'muted small' }, `Priority ${r.priority} · added ${time(r.created_at)}`),
      h('div', { class: 'row' }, confirmButton('Delete', 'Click again to delete', async () => {
        try {
          await api('DELETE', `/agent-accounts/${encodeURIComponent(agentId)}/routing-rules/${encodeURIComponent(r.rule_id)}`);
          announce('Routing rule deleted.');
          await loadRules();
        } catch (err) {
          itemError.show(`The rule was not deleted. ${explain(err)}`);
        }
      })),
      itemError.el);
  }

  async function loadRules() {
    try {
      const { rules } = await api('GET', `/agent-accounts/${encodeURIComponent(agentId)}/routing-rules`);
      listError.clear();
      replace(list, (rules || []).length === 0
        ? h('li', { class: 'card' }, h('p', { class: 'muted' }, 'No rules: every task stays with this agent.'))
        : rules.map(ruleItem));
    } catch (err) {
      listError.show(`The routing rules could not be loaded. ${explain(err)}`);
    }
  }

  async function loadTargets() {
    try { agents = ((await api('GET', '/agent-accounts')).agents || []).filter((a) => a.agent_id !== agentId); } catch { agents = []; }
    try { partners = (await api('GET', '/a2a/partners')).partners || []; } catch { partners = []; }
    const chosen = target.control.value;
    replace(target.control,
      agents.length === 0 && partners.length === 0 ? h('option', { value: '' }, 'No other agent yet') : null,
      agents.length ? h('optgroup', { label: 'Agents' }, agents.map((a) => h('option', { value: `agent:${a.agent_id}` }, a.name))) : null,
      partners.length ? h('optgroup', { label: 'Partner platforms' }, partners.map((p) => h('option', { value: `partner:${p.partner_id}` }, p.name))) : null);
    if (chosen && [...target.control.options].some((o) => o.value === chosen)) target.control.value = chosen;
  }

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErr.clear();
    [value, target, priority, name].forEach((f) => showFieldError(f, ''));
    const k = kind.control.value;
    const v = value.control.value.trim();
    if (!v) {
      showFieldError(value, 'Fill this in: it decides which tasks the rule takes.');
      value.control.focus();
      return;
    }
    if (!target.control.value) {
      showFieldError(target, 'Create another agent first: a rule hands tasks to one.');
      target.control.focus();
      return;
    }
    const p = Number(priority.control.value || '0');
    if (!Number.isInteger(p)) {
      showFieldError(priority, 'The priority is a whole number, like 0, 5 or -1.');
      priority.control.focus();
      return;
    }
    const match = k === 'keywords' ? { keywords: v.split(',').map((x) => x.trim()).filter(Boolean) } : { [k]: v };
    const [tkind, tid] = target.control.value.split(':');
    const body = { match, priority: p, target: tkind === 'agent' ? { agent_id: tid } : { partner_id: tid } };
    if (name.control.value.trim()) body.name = name.control.value.trim();
    submit.disabled = true;
    try {
      await api('POST', `/agent-accounts/${encodeURIComponent(agentId)}/routing-rules`, body);
      value.control.value = '';
      name.control.value = '';
      announce('Routing rule added.');
      await loadRules();
    } catch (err) {
      const msg = explain(err);
      const about = err && err.message ? err.message : '';
      const f = /^(match|each keyword)/.test(about) ? value : /^target/.test(about) ? target : /^name/.test(about) ? name : null;
      if (f) { showFieldError(f, msg); f.control.focus(); } else formErr.show(`The rule was not added. ${msg}`);
    } finally {
      submit.disabled = false;
    }
  });

  return {
    el,
    load: () => Promise.all([loadRules(), loadTargets()]),
    // changed follows edits of the agent: its skills are what a skill rule
    // may ask for.
    changed(agent) {
      skills = agent.skills || [];
      describeKind();
    },
  };
}
