// An agent's A2A details: where A2A clients find it (its agent card), the
// endpoint of each protocol version, what its card says it can do, its API
// keys (created, shown once, listed by prefix, revoked) and a ready curl
// command for message/send.

import { api, explain } from './api.js';
import { h, replace, field, formError, copyButton, confirmButton, announce, secretOnce } from './dom.js';
import { time } from './format.js';

// The scopes an API key may hold, as the platform names them.
const scopes = [
  ['a2a:send', 'Send tasks'],
  ['a2a:read', 'Read tasks'],
  ['a2a:cancel', 'Cancel tasks'],
  ['a2a:push', 'Set push notifications'],
];

const bindingLabels = { JSONRPC: 'JSON-RPC', 'HTTP+JSON': 'HTTP+JSON (REST)', GRPC: 'gRPC' };

// messageIdCommand prints a new UUID for each message the curl example
// sends, so the command can be run again (with another text) without
// reusing the message id, which the endpoint keeps as the message's
// idempotency key. uuidgen is on macOS; Linux without util-linux has the
// kernel's generator.
const messageIdCommand = 'uuidgen 2>/dev/null || cat /proc/sys/kernel/random/uuid';

// curlExample is a message/send request (A2A 0.3 JSON-RPC, which the
// endpoint serves when no A2A-Version header is sent) to the agent's URL.
// The body is in single quotes; the message id leaves them for the shell
// to fill it in each time the command runs.
export function curlExample(url) {
  const idSlot = '\u0000message-id\u0000';
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'message/send',
    params: {
      message: { kind: 'message', role: 'user', messageId: idSlot, parts: [{ kind: 'text', text: 'Hello! What can you do?' }] },
      configuration: { blocking: true },
    },
  }).replace(JSON.stringify(idSlot), `"'"$(${messageIdCommand})"'"`);
  return [
    'export A2A_API_KEY=<one of this agent\'s API keys>',
    '',
    `curl -sS -X POST '${url}' \\`,
    '  -H \'Content-Type: application/json\' \\',
    '  -H "X-API-Key: $A2A_API_KEY" \\',
    `  -d '${body}'`,
  ].join('\n');
}

export function a2aSection(agentId) {
  const cardBox = h('div', { id: 'a2a-card' }, h('p', { class: 'muted' }, 'Loading the agent card…'));
  const keysList = h('ul', { class: 'cards', id: 'api-keys', 'aria-label': 'API keys' });
  const keysError = formError();
  const once = h('div', { id: 'api-key-once' });
  const el = h('section', { class: 'panel', id: 'a2a', 'aria-labelledby': 'a2a-title' },
    h('h2', { id: 'a2a-title' }, 'Reach it over A2A'),
    h('p', { class: 'muted' }, 'Any A2A client (another agent, a script, an A2A SDK) can send this agent work. It finds the agent from its card, and authenticates with one of the API keys below.'),
    cardBox,
    h('h3', { id: 'api-keys-title' }, 'API keys'),
    h('p', { class: 'hint' }, 'Each key works for this agent only. A key is shown once, when it is created; the list shows its first characters so you can tell keys apart.'),
    keysList, keysError.el,
    createKeyForm(),
    once);

  function renderCard(card) {
    const cardURL = `${card.url}/.well-known/agent-card.json`;
    const interfaces = card.supportedInterfaces || [];
    const caps = card.capabilities || {};
    const skills = card.skills || [];
    const isPublic = !card.securityRequirements || card.securityRequirements.length === 0;
    const curl = curlExample(card.url);
    replace(cardBox,
      h('h3', {}, 'Agent card'),
      h('div', { class: 'code-box' }, h('code', { id: 'a2a-card-url', class: 'ids' }, cardURL), copyButton('Copy card URL', cardURL)),
      h('h3', { id: 'endpoints-title' }, 'Endpoints'),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'endpoints', 'aria-labelledby': 'endpoints-title' },
          h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'A2A version'), h('th', { scope: 'col' }, 'Binding'), h('th', { scope: 'col' }, 'URL'))),
          h('tbody', {}, interfaces.map((i) => h('tr', {},
            h('td', {}, i.protocolVersion),
            h('td', {}, bindingLabels[i.protocolBinding] || i.protocolBinding),
            h('td', { class: 'mono ids' }, i.url)))))),
      h('p', { class: 'hint' }, 'Clients of version 1.0 send the header ', h('code', {}, 'A2A-Version: 1.0'), '; without it the endpoint speaks 0.3. HTTP+JSON clients of 0.3 add ', h('code', {}, '/v1'), ' to the URL.'),
      h('dl', { class: 'meta' },
        h('dt', {}, 'Skills'), h('dd', { id: 'a2a-skills' }, skills.length
          ? h('ul', {}, skills.map((s) => h('li', {}, h('strong', {}, s.name), s.description ? ` — ${s.description}` : '')))
          : 'None listed: add skills in the details below so clients know what to ask.'),
        h('dt', {}, 'Capabilities'), h('dd', { id: 'a2a-capabilities' }, h('ul', {},
          h('li', {}, caps.streaming ? 'Streams its progress' : 'No streaming'),
          h('li', {}, caps.pushNotifications ? 'Push notifications to a client\'s webhook' : 'No push notifications'),
          h('li', {}, `Takes ${(card.defaultInputModes || []).join(', ') || 'text'}`))),
        h('dt', {}, 'Who may call'), h('dd', {}, isPublic
          ? 'Anyone: this agent is public (each caller is rate-limited).'
          : 'Callers with one of its API keys, or a token the platform or a trusted identity provider signed.')),
      h('h3', { id: 'curl-title' }, 'Try it with curl'),
      h('p', { class: 'hint' }, 'Sends one message and waits for the answer. Put one of the API keys below in A2A_API_KEY first.'),
      h('pre', { id: 'a2a-curl', tabindex: '0', 'aria-labelledby': 'curl-title' }, curl),
      copyButton('Copy curl command', curl));
  }

  async function loadCard() {
    try {
      const resp = await fetch(`/a2a/${encodeURIComponent(agentId)}/.well-known/agent-card.json`, { cache: 'no-store', credentials: 'same-origin' });
      if (!resp.ok) throw new Error(`the platform answered ${resp.status}`);
      renderCard(await resp.json());
    } catch (err) {
      replace(cardBox, h('p', { class: 'form-error', role: 'alert' }, `The agent card could not be loaded: ${err.message}. Reload the page to try again.`));
    }
  }

  function keyCard(k) {
    const cardError = formError();
    return h('li', { class: 'card', dataset: { keyId: k.key_id } },
      h('h4', {}, k.name || 'Unnamed key'),
      h('p', { class: 'small' }, h('code', { class: 'key-prefix' }, `${k.prefix}…`), ` · created ${time(k.created_at)}`),
      h('p', { class: 'muted small' }, `Allows: ${(k.scopes || []).map((s) => (scopes.find(([v]) => v === s) || [s, s])[1]).join(', ')}`),
      h('div', { class: 'row' }, confirmButton('Revoke', 'Click again to revoke', async () => {
        try {
          await api('DELETE', `/a2a/${encodeURIComponent(agentId)}/api-keys/${encodeURIComponent(k.key_id)}`);
          announce('API key revoked.');
          await loadKeys();
        } catch (err) {
          cardError.show(`The key was not revoked. ${explain(err)}`);
        }
      })),
      cardError.el);
  }

  async function loadKeys() {
    try {
      const { keys } = await api('GET', `/a2a/${encodeURIComponent(agentId)}/api-keys`);
      keysError.clear();
      replace(keysList, (keys || []).length === 0
        ? h('li', { class: 'card' }, h('p', { class: 'muted' }, 'No API keys yet.'))
        : keys.map(keyCard));
    } catch (err) {
      keysError.show(`The API keys could not be loaded. ${explain(err)}`);
    }
  }

  function createKeyForm() {
    const name = field({ label: 'Key name', name: 'key_name', hint: 'Who or what uses it, e.g. "CI pipeline".' });
    const boxes = scopes.map(([value, label]) => {
      const input = h('input', { type: 'checkbox', name: 'scope', value, checked: true, id: `scope-${value.replace(':', '-')}` });
      return { input, el: h('label', { for: input.id }, input, h('span', {}, label)) };
    });
    const error = formError();
    const submit = h('button', { type: 'submit', class: 'primary' }, 'Create API key');
    const form = h('form', { class: 'stack', id: 'new-api-key', novalidate: true, 'aria-labelledby': 'new-key-title' },
      h('h4', { id: 'new-key-title' }, 'New API key'),
      name.wrap,
      h('fieldset', {}, h('legend', {}, 'What the key allows'), h('div', { class: 'checks' }, boxes.map((b) => b.el))),
      error.el,
      h('div', { class: 'row' }, submit));
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      error.clear();
      const chosen = boxes.filter((b) => b.input.checked).map((b) => b.input.value);
      if (chosen.length === 0) {
        error.show('Choose at least one thing the key allows.');
        boxes[0].input.focus();
        return;
      }
      submit.disabled = true;
      try {
        const created = await api('POST', `/a2a/${encodeURIComponent(agentId)}/api-keys`, { name: name.control.value.trim(), scopes: chosen });
        name.control.value = '';
        const hide = h('button', { type: 'button', class: 'small' }, 'I saved it: hide the key');
        hide.addEventListener('click', () => { replace(once); submit.focus(); });
        replace(once, secretOnce({ title: 'API key created. It is shown only now: copy it somewhere safe.', id: 'new-api-key-value', value: created.api_key, copyLabel: 'Copy key', actions: [hide] }));
        announce('API key created.');
        await loadKeys();
      } catch (err) {
        error.show(`No key was created. ${explain(err)}`);
      } finally {
        submit.disabled = false;
      }
    });
    return form;
  }

  return {
    el,
    load: () => Promise.all([loadCard(), loadKeys()]),
    // changed reloads the card after the agent was edited (its name and
    // skills are on it).
    changed: loadCard,
  };
}
