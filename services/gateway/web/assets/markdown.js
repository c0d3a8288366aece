// Markdown for agent output and Markdown artifacts, as GitHub renders it
// (tables, task lists, strikethrough, autolinks): marked turns it into HTML,
// DOMPurify keeps only what Markdown makes, and the nodes are checked once
// more before they reach the page. Nothing in the text can run: raw HTML in
// the source stays text (but for <br>, common in table cells), so no
// script, event handler, style or form gets in; nothing is loaded from
// where the text points (an image becomes a link to it); links go only to
// http(s) and open in a new tab with rel="noopener noreferrer". Headings
// move one level down, under the page's own. The libraries are vendored in
// third_party/ (see its README.md).

import { Marked } from './marked.esm.js';
import DOMPurify from './purify.es.mjs';
import { h } from './dom.js';

const escapes = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
const escapeHTML = (s) => String(s).replace(/[&<>"']/g, (c) => escapes[c]);

const marked = new Marked({
  gfm: true,
  renderer: {
    heading({ tokens, depth }) {
      const level = Math.min(depth + 1, 6);
      return `<h${level}>${this.parser.parseInline(tokens)}</h${level}>\n`;
    },
    image({ href, text }) {
      return `<a href="${escapeHTML(href)}">${escapeHTML(text || href)}</a>`;
    },
    // Raw HTML, a block or a tag within a line, is shown as written. Were
    // it parsed, even only to be sanitized, the browser would report each
    // inline handler and style in it as a Content-Security-Policy breach.
    html({ text }) {
      return /^<br\s*\/?>$/i.test(text.trim()) ? '<br>' : escapeHTML(text);
    },
  },
});

// What Markdown makes, and nothing else: whatever marked lets through that
// is not on this list goes.
const sanitizer = {
  ALLOWED_TAGS: ['p', 'br', 'hr', 'h2', 'h3', 'h4', 'h5', 'h6', 'em', 'strong', 'del', 's', 'code', 'pre', 'blockquote',
    'ul', 'ol', 'li', 'a', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'input'],
  ALLOWED_ATTR: ['href', 'title', 'align', 'start', 'type', 'checked'],
  ALLOW_DATA_ATTR: false,
  RETURN_DOM_FRAGMENT: true,
};

export function renderMarkdown(source) {
  const html = marked.parse(String(source || ''), { async: false });
  const fragment = DOMPurify.sanitize(html, sanitizer);
  for (const a of fragment.querySelectorAll('a')) checkLink(a);
  for (const input of fragment.querySelectorAll('input')) checkBox(input);
  for (const table of fragment.querySelectorAll('table')) {
    const wrap = h('div', { class: 'table-wrap' });
    table.replaceWith(wrap);
    wrap.appendChild(table);
  }
  return h('div', { class: 'markdown' }, fragment);
}

// checkLink keeps a link to http(s) and turns any other into its text with
// the target after it.
function checkLink(a) {
  const href = a.getAttribute('href') || '';
  let url = null;
  try { url = new URL(href); } catch { url = null; }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    const text = a.textContent;
    a.replaceWith(href && href !== text ? `${text} (${href})` : text);
    return;
  }
  a.setAttribute('href', url.href);
  a.setAttribute('rel', 'noopener noreferrer');
  a.setAttribute('target', '_blank');
}

// checkBox keeps a task list's check box, read-only and named by its state;
// any other input goes.
function checkBox(input) {
  if (input.getAttribute('type') !== 'checkbox') {
    input.remove();
    return;
  }
  input.disabled = true;
  input.setAttribute('aria-label', input.checked ? 'Done' : 'Not done');
}
