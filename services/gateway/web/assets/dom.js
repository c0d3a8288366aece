// Building the page: every element is made with h(), and text always goes in
// as text nodes, never as HTML, so nothing an agent or a user wrote can run.
// The one exception is Markdown (markdown.js), whose HTML is sanitized to an
// allow-list before it becomes nodes.

// h creates an element. attrs: "class", "text", "on<event>" handlers,
// "dataset" (an object), booleans (true sets an empty attribute, false or
// null leaves it out), anything else as an attribute. children: nodes,
// strings, numbers, arrays of them; null and undefined are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

// replace swaps an element's children.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

let uid = 0;
// id returns a fresh element id with a readable prefix.
export function id(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

// announce tells screen readers about something that happened elsewhere on
// the page (a polite live region).
export function announce(message) {
  const region = document.getElementById('announce');
  if (!region) return;
  region.textContent = '';
  // A new text node after clearing makes readers speak it even when repeated.
  setTimeout(() => { region.textContent = message; }, 50);
}

// field builds a labelled form field with a place for its error.
// kind: 'input' (default), 'textarea' or 'select'; options for select are
// [value, label] pairs.
export function field({ label, name, kind = 'input', type = 'text', value = '', hint, options, required, attrs = {} }) {
  const inputId = id(name);
  const errorId = `${inputId}-error`;
  const hintId = hint ? `${inputId}-hint` : null;
  const describedBy = [hintId, errorId].filter(Boolean).join(' ');
  let control;
  const common = { id: inputId, name, 'aria-describedby': describedBy, 'aria-required': required ? 'true' : null, ...attrs };
  if (kind === 'textarea') {
    control = h('textarea', common);
    control.value = value;
  } else if (kind === 'select') {
    control = h('select', common, (options || []).map(([v, l]) => h('option', { value: v, selected: v === value }, l)));
  } else {
    control = h('input', { type, value, autocomplete: 'off', spellcheck: type === 'text' ? null : 'false', ...common });
  }
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const wrap = h('div', { class: 'field', dataset: { field: name } },
    h('label', { for: inputId }, label, required ? h('span', { class: 'muted' }, ' (required)') : null),
    control,
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    error);
  return { wrap, control, error, name };
}

// showFieldError marks a field invalid with a message next to it (or
// clears it with an empty message).
export function showFieldError(f, message) {
  if (message) {
    f.error.textContent = message;
    f.error.hidden = false;
    f.control.setAttribute('aria-invalid', 'true');
  } else {
    f.error.textContent = '';
    f.error.hidden = true;
    f.control.removeAttribute('aria-invalid');
  }
}

// formError is the error line of a whole form, shown next to its buttons.
export function formError() {
  const el = h('p', { class: 'form-error', role: 'alert', hidden: true });
  return {
    el,
    show(message) { el.textContent = message; el.hidden = !message; },
    clear() { el.textContent = ''; el.hidden = true; },
  };
}

// copyButton copies text() to the clipboard and says so.
export function copyButton(label, text) {
  const status = h('span', { class: 'muted small', role: 'status' });
  const button = h('button', {
    type: 'button',
    class: 'small',
    onclick: async () => {
      const ok = await copyText(typeof text === 'function' ? text() : text);
      status.textContent = ok ? 'Copied' : 'Select the text and copy it';
      setTimeout(() => { status.textContent = ''; }, 2500);
    },
  }, label);
  return h('span', { class: 'row' }, button, status);
}

// secretOnce shows a credential the platform returns only when it is
// created: a title, the value (in a pre with the given id), a button to copy
// it next to any other actions (a hide button), and more below it
// (connection details).
export function secretOnce({ title, id, value, copyLabel, actions = [] }, ...more) {
  return h('div', { class: 'secret-once', role: 'status' },
    h('p', {}, h('strong', {}, title)),
    h('pre', { id }, value),
    h('div', { class: 'row' }, copyButton(copyLabel, value), ...actions),
    ...more);
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    // Without clipboard permission (e.g. plain http on another host), fall
    // back to a hidden text area and the copy command.
    const ta = h('textarea', { class: 'visually-hidden', 'aria-hidden': 'true', tabindex: '-1' });
    ta.value = text;
    document.body.appendChild(ta);
    ta.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch { ok = false; }
    ta.remove();
    return ok;
  }
}

// confirmButton is a button that asks "again to confirm" before acting, so
// no modal dialog is needed and the keyboard flow stays simple.
export function confirmButton(label, confirmLabel, action, cls = 'danger small') {
  let armed = false;
  let timer = null;
  const button = h('button', { type: 'button', class: cls });
  const reset = () => { armed = false; button.textContent = label; };
  reset();
  button.addEventListener('click', async () => {
    if (!armed) {
      armed = true;
      button.textContent = confirmLabel;
      clearTimeout(timer);
      timer = setTimeout(reset, 5000);
      return;
    }
    clearTimeout(timer);
    button.disabled = true;
    try { await action(); } finally { button.disabled = false; reset(); }
  });
  return button;
}

// Fills main with the page of something that could not be loaded: its
// title (also the document's), why, and a way back. Returns a view with
// nothing to dispose.
export function notFoundView(main, title, reason, back) {
  document.title = `${title} · A2A Mesh`;
  replace(main, h('h1', { tabindex: '-1' }, title),
    h('p', { class: 'form-error', role: 'alert' }, reason),
    h('p', {}, back));
  return { dispose() {} };
}
