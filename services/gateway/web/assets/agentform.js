// The agent form, for creating and editing: name, description, business
// instructions and skills. The platform validates; its answer is shown next
// to the field it is about.

import { h, field, showFieldError, formError, id } from './dom.js';
import { explain, fieldOf } from './api.js';

export function agentForm({ agent, submitLabel, onSubmit, onCancel }) {
  const a = agent || { name: '', description: '', instructions: '', skills: [] };
  const name = field({ label: 'Name', name: 'name', value: a.name, required: true, hint: 'How people and other agents know this agent.' });
  const description = field({ label: 'Description', name: 'description', value: a.description || '', hint: 'One sentence about what it does.' });
  const instructions = field({
    label: 'Instructions', name: 'instructions', kind: 'textarea', value: a.instructions || '',
    hint: 'Business instructions handed to the agent host with every task.',
  });
  const skillsError = h('p', { class: 'field-error', id: id('skills-error'), hidden: true });
  const skillRows = h('div', { class: 'skill-rows' });
  const skillsFieldset = h('fieldset', { 'aria-describedby': skillsError.id },
    h('legend', {}, 'Skills'),
    h('p', { class: 'hint' }, 'What the agent can do; other agents see these.'),
    skillRows,
    h('button', { type: 'button', class: 'small', onclick: () => { addSkill({}); skillRows.lastElementChild.querySelector('input').focus(); } }, 'Add skill'),
    skillsError);
  const fields = { name, description, instructions };
  const error = formError();
  const submit = h('button', { type: 'submit', class: 'primary' }, submitLabel);

  function addSkill(skill) {
    const nameId = id('skill-name');
    const descId = id('skill-desc');
    const row = h('div', { class: 'skill-row', dataset: { skillId: skill.id || '' } },
      h('div', {}, h('label', { for: nameId }, 'Skill name'), h('input', { id: nameId, type: 'text', value: skill.name || '', class: 'skill-name', autocomplete: 'off' })),
      h('div', {}, h('label', { for: descId }, 'What it does'), h('input', { id: descId, type: 'text', value: skill.description || '', class: 'skill-description', autocomplete: 'off' })),
      null);
    const remove = h('button', { type: 'button', class: 'small', 'aria-label': `Remove skill ${skill.name || ''}`.trim(), onclick: () => row.remove() }, 'Remove');
    row.appendChild(remove);
    skillRows.appendChild(row);
  }
  (a.skills || []).forEach(addSkill);

  function skills() {
    const used = new Set();
    return [...skillRows.children].map((row, i) => {
      const skillName = row.querySelector('.skill-name').value.trim();
      const desc = row.querySelector('.skill-description').value.trim();
      if (!skillName && !desc) return null;
      let sid = row.dataset.skillId || slug(skillName) || `skill-${i + 1}`;
      while (used.has(sid)) sid += '-2';
      used.add(sid);
      const s = { id: sid, name: skillName };
      if (desc) s.description = desc;
      return s;
    }).filter(Boolean);
  }

  const form = h('form', { novalidate: true, class: 'agent-form' },
    name.wrap, description.wrap, instructions.wrap, skillsFieldset,
    error.el,
    h('div', { class: 'row' }, submit, onCancel ? h('button', { type: 'button', onclick: onCancel }, 'Cancel') : null));

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    Object.values(fields).forEach((f) => showFieldError(f, ''));
    skillsError.hidden = true;
    error.clear();
    const body = {
      name: name.control.value.trim(),
      description: description.control.value.trim(),
      instructions: instructions.control.value,
      skills: skills(),
    };
    submit.disabled = true;
    try {
      await onSubmit(body);
    } catch (err) {
      const f = fieldOf(err);
      if (f === 'skills') {
        skillsError.textContent = explain(err);
        skillsError.hidden = false;
        const first = skillRows.querySelector('input');
        if (first) first.focus();
      } else if (fields[f]) {
        showFieldError(fields[f], explain(err));
        fields[f].control.focus();
      } else {
        error.show(explain(err));
      }
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function slug(s) {
  return s.toLowerCase().normalize('NFKD').replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 64);
}
