// Webhooks and event consumer credentials: list, create (the secret or the
// credential is shown once), delete, and a webhook's recent deliveries.

import { api, explain, fieldOf, session } from './api.js';
import { h, replace, field, showFieldError, formError, confirmButton, announce, id, secretOnce } from './dom.js';
import { time } from './format.js';

const deliveryStates = { retrying: 'Retrying', dead: 'Gave up', delivered: 'Delivered' };

export async function integrationsView(main) {
  document.title = 'Integrations · A2A Mesh';
  let agents = [];
  const names = new Map();
  const pageError = formError();
  const webhooks = webhooksSection();
  const consumers = consumersSection();
  replace(main,
    h('div', { class: 'page-head' }, h('h1', { tabindex: '-1' }, 'Integrations')),
    h('p', { class: 'lede' }, 'Send every event to your own systems: an HTTP endpoint (webhook), or a credential that reads the events straight from NATS.'),
    pageError.el,
    webhooks.el,
    consumers.el);

  try {
    agents = (await api('GET', '/agent-accounts')).agents || [];
    agents.sort((a, b) => a.name.localeCompare(b.name));
    agents.forEach((a) => names.set(a.agent_id, a.name));
  } catch (err) {
    pageError.show(`The agents could not be loaded. ${explain(err)}`);
  }
  webhooks.ready();
  consumers.ready();
  await Promise.all([webhooks.load(), consumers.load()]);

  function agentOptions() {
    return [['', 'Every agent'], ...agents.map((a) => [a.agent_id, a.name])];
  }

  function typeChecks(prefix) {
    const boxes = session.eventTypes.map((t) => {
      const cid = id(prefix);
      return { t, input: h('input', { type: 'checkbox', id: cid, value: t }), label: cid };
    });
    const errorEl = h('p', { class: 'field-error', id: id(`${prefix}-error`), hidden: true });
    const set = h('fieldset', { 'aria-describedby': errorEl.id },
      h('legend', {}, 'Event types'),
      h('p', { class: 'hint' }, 'Leave all unchecked for every type.'),
      h('div', { class: 'checks' }, boxes.map((b) => h('label', { for: b.label }, b.input, h('span', { class: 'mono' }, b.t)))),
      errorEl);
    return {
      el: set,
      values: () => boxes.filter((b) => b.input.checked).map((b) => b.t),
      reset: () => boxes.forEach((b) => { b.input.checked = false; }),
      error: (msg) => { errorEl.textContent = msg || ''; errorEl.hidden = !msg; },
    };
  }

  function filtersText(x) {
    const parts = [];
    parts.push(x.agent_id ? `agent ${names.get(x.agent_id) || x.agent_id}` : 'every agent');
    if (x.task_run_id) parts.push(`task ${x.task_run_id}`);
    parts.push(x.types && x.types.length ? x.types.map((t) => t.replace(/^dev\.a2amesh\./, '')).join(', ') : 'every event type');
    return parts.join(' · ');
  }

  // onSubmit sends a section's form with send, clearing its errors first;
  // a refusal is shown beside the field it names, else above the button.
  function onSubmit(form, { fields, types, formErr, submit }, send) {
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      Object.values(fields).forEach((f) => showFieldError(f, ''));
      types.error('');
      formErr.clear();
      submit.disabled = true;
      try {
        await send();
      } catch (err) {
        const f = fieldOf(err);
        if (f === 'types') types.error(explain(err));
        else if (fields[f]) { showFieldError(fields[f], explain(err)); fields[f].control.focus(); } else formErr.show(explain(err));
      } finally {
        submit.disabled = false;
      }
    });
  }

  // loadCards fills a section's list with a card for each of what path
  // answers under key, or says why it could not.
  async function loadCards(list, error, { path, key, empty, what, card }) {
    try {
      const all = (await api('GET', path))[key];
      error.clear();
      replace(list, all.length === 0
        ? h('li', { class: 'card' }, h('p', { class: 'muted' }, empty))
        : all.map((x) => card(x)));
    } catch (err) {
      error.show(`The ${what} could not be loaded. ${explain(err)}`);
    }
  }

  // ---- webhooks ----

  function webhooksSection() {
    const list = h('ul', { class: 'cards', 'aria-label': 'Webhooks' });
    const error = formError();
    const once = h('div', { 'aria-live': 'polite' });
    const form = h('form', { novalidate: true, id: 'webhook-form' });
    const el = h('section', { class: 'panel', id: 'webhooks', 'aria-labelledby': 'webhooks-title' },
      h('h2', { id: 'webhooks-title' }, 'Webhooks'),
      h('p', { class: 'muted' }, 'The platform POSTs each event to your URL, signed with the webhook\'s secret, and retries failures for a day.'),
      error.el, list,
      h('h3', {}, 'New webhook'), form, once);

    return {
      el,
      ready() {
        const url = field({ label: 'Endpoint URL', name: 'url', type: 'url', required: true, hint: 'Where the events are sent, e.g. https://example.com/a2a-events.' });
        const agent = field({ label: 'Agent', name: 'agent_id', kind: 'select', options: agentOptions() });
        const secret = field({ label: 'Signing secret', name: 'secret', type: 'password', hint: 'At least 16 characters; leave empty to have one generated.' });
        const types = typeChecks('wh-type');
        const formErr = formError();
        const submit = h('button', { type: 'submit', class: 'primary' }, 'Create webhook');
        replace(form, url.wrap, agent.wrap, types.el, secret.wrap, formErr.el, h('div', { class: 'row' }, submit));
        const fields = { url, agent_id: agent, secret };
        onSubmit(form, { fields, types, formErr, submit }, async () => {
          const body = { url: url.control.value.trim() };
          if (agent.control.value) body.agent_id = agent.control.value;
          if (secret.control.value) body.secret = secret.control.value;
          const t = types.values();
          if (t.length) body.types = t;
          const created = await api('POST', '/webhooks', body);
          url.control.value = '';
          secret.control.value = '';
          types.reset();
          replace(once, secretOnce({ title: 'Webhook created. Its signing secret is shown only now:', id: 'webhook-secret', value: created.secret, copyLabel: 'Copy secret' }));
          announce('Webhook created.');
          await this.load();
        });
      },
      load() {
        return loadCards(list, error, {
          path: '/webhooks', key: 'webhooks', empty: 'No webhooks yet.', what: 'webhooks',
          card: (w) => webhookCard(w, () => this.load()),
        });
      },
    };
  }

  function webhookCard(w, reload) {
    const panel = h('div', { id: `deliveries-${w.webhook_id}`, hidden: true });
    const toggle = h('button', { type: 'button', class: 'small', 'aria-expanded': 'false', 'aria-controls': panel.id }, 'Recent deliveries');
    const cardError = formError();
    toggle.addEventListener('click', async () => {
      const open = toggle.getAttribute('aria-expanded') === 'true';
      toggle.setAttribute('aria-expanded', String(!open));
      panel.hidden = open;
      if (!open) await showDeliveries(w, panel);
    });
    return h('li', { class: 'card', dataset: { webhookId: w.webhook_id } },
      h('h3', { class: 'ids' }, w.url),
      h('p', { class: 'muted small' }, filtersText(w)),
      h('p', { class: 'small' }, `Secret ${w.secret_hint} · created ${time(w.created_at)}`),
      h('div', { class: 'row' }, toggle, confirmButton('Delete', 'Click again to delete', async () => {
        try {
          await api('DELETE', `/webhooks/${encodeURIComponent(w.webhook_id)}`);
          announce('Webhook deleted.');
          await reload();
        } catch (err) {
          cardError.show(`The webhook was not deleted. ${explain(err)}`);
        }
      })),
      cardError.el,
      panel);
  }

  async function showDeliveries(w, panel) {
    replace(panel, h('p', { class: 'muted small' }, 'Loading deliveries…'));
    try {
      const { deliveries } = await api('GET', `/webhooks/${encodeURIComponent(w.webhook_id)}/deliveries`);
      if (deliveries.length === 0) {
        replace(panel, h('p', { class: 'muted small' }, 'No failed deliveries: every event so far was accepted on its first try (first-try successes are not listed).'));
        return;
      }
      replace(panel,
        h('p', { class: 'muted small' }, 'Events that failed at least once.'),
        h('ul', { class: 'deliveries', 'aria-label': 'Deliveries' }, deliveries.map((d) => deliveryRow(w, d, panel))));
    } catch (err) {
      replace(panel, h('p', { class: 'form-error' }, `The deliveries could not be loaded. ${explain(err)}`));
    }
  }

  function deliveryRow(w, d, panel) {
    const last = d.attempts && d.attempts.length ? d.attempts[d.attempts.length - 1] : null;
    let outcome = '';
    if (last) {
      outcome = last.status_code ? `HTTP ${last.status_code}` : '';
      if (last.error && !last.error.includes(outcome)) outcome = `${outcome} ${last.error}`.trim();
      else if (last.error) outcome = last.error;
    }
    const lastText = last ? `last attempt ${time(last.at)}${outcome ? `: ${outcome}` : ''}` : '';
    const rowError = formError();
    const retry = d.state === 'delivered' ? null : h('button', {
      type: 'button', class: 'small',
      onclick: async () => {
        rowError.clear();
        try {
          await api('POST', `/webhooks/${encodeURIComponent(w.webhook_id)}/deliveries/${encodeURIComponent(d.delivery_id)}/redrive`);
          announce('Delivery retried.');
          await showDeliveries(w, panel);
        } catch (err) {
          rowError.show(`The delivery was not retried. ${explain(err)}`);
        }
      },
    }, 'Retry now');
    return h('li', { dataset: { deliveryId: d.delivery_id } },
      h('span', { class: 'mono' }, d.event_type.replace(/^dev\.a2amesh\./, '')),
      h('span', { class: 'badge', dataset: { status: d.state } }, deliveryStates[d.state] || d.state),
      h('span', { class: 'detail' },
        `${d.attempt_count} attempt${d.attempt_count === 1 ? '' : 's'}`,
        lastText ? ` · ${lastText}` : '',
        d.next_attempt_at ? ` · next try ${time(d.next_attempt_at)}` : ''),
      retry ? h('span', { class: 'detail' }, retry) : null,
      rowError.el);
  }

  // ---- consumers ----

  function consumersSection() {
    const list = h('ul', { class: 'cards', 'aria-label': 'Event consumer credentials' });
    const error = formError();
    const once = h('div', { 'aria-live': 'polite' });
    const form = h('form', { novalidate: true, id: 'consumer-form' });
    const el = h('section', { class: 'panel', id: 'consumers', 'aria-labelledby': 'consumers-title' },
      h('h2', { id: 'consumers-title' }, 'Event consumers (NATS)'),
      h('p', { class: 'muted' }, 'A credential for a program that reads events straight from NATS, confined to the events it is allowed.'),
      error.el, list,
      h('h3', {}, 'New consumer credential'), form, once);
    return {
      el,
      ready() {
        const name = field({ label: 'Name', name: 'name', required: true, hint: 'What the credential is for.' });
        const agent = field({ label: 'Agent', name: 'agent_id', kind: 'select', options: agentOptions() });
        const types = typeChecks('con-type');
        const formErr = formError();
        const submit = h('button', { type: 'submit', class: 'primary' }, 'Create credential');
        replace(form, name.wrap, agent.wrap, types.el, formErr.el, h('div', { class: 'row' }, submit));
        const fields = { name, agent_id: agent };
        onSubmit(form, { fields, types, formErr, submit }, async () => {
          const body = { name: name.control.value.trim() };
          if (agent.control.value) body.agent_id = agent.control.value;
          const t = types.values();
          if (t.length) body.types = t;
          const c = await api('POST', '/consumers', body);
          name.control.value = '';
          types.reset();
          replace(once, secretOnce({ title: 'Credential created. It is shown only now:', id: 'consumer-credential', value: c.credential, copyLabel: 'Copy credential' },
            h('dl', { class: 'meta' },
              h('dt', {}, 'NATS URL'), h('dd', { class: 'mono' }, c.nats_url),
              h('dt', {}, 'Stream'), h('dd', { class: 'mono' }, c.stream),
              h('dt', {}, 'Durable consumer'), h('dd', { class: 'mono' }, c.durable_name),
              h('dt', {}, 'Inbox prefix'), h('dd', { class: 'mono' }, c.inbox_prefix),
              h('dt', {}, 'Subjects'), h('dd', { class: 'mono' }, (c.subjects || []).join(' ')))));
          announce('Credential created.');
          await this.load();

        });
      },
      load() {
        return loadCards(list, error, {
          path: '/consumers', key: 'consumers', empty: 'No consumer credentials yet.', what: 'consumer credentials',
          card: (c) => consumerCard(c, () => this.load()),
        });
      },
    };
  }

  function consumerCard(c, reload) {
    const cardError = formError();
    return h('li', { class: 'card', dataset: { consumerId: c.consumer_id } },
      h('h3', {}, c.name),
      h('p', { class: 'muted small' }, filtersText(c)),
      h('p', { class: 'small mono ids' }, `durable ${c.durable_name}`),
      h('p', { class: 'small' }, `Created ${time(c.created_at)}`),
      h('div', { class: 'row' }, confirmButton('Delete', 'Click again to delete', async () => {
        try {
          await api('DELETE', `/consumers/${encodeURIComponent(c.consumer_id)}`);
          announce('Credential deleted.');
          await reload();
        } catch (err) {
          cardError.show(`The credential was not deleted. ${explain(err)}`);
        }
      })),
      cardError.el);
  }
}
