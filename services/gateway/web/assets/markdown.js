// A safe subset of Markdown for agent output and Markdown artifacts:
// headings, paragraphs, emphasis, inline code, fenced code blocks, lists,
// block quotes and links. It builds DOM nodes from text, so raw HTML in the
// source stays text; links go only to http(s) and open with
// rel="noopener noreferrer".

import { h } from './dom.js';

export function renderMarkdown(source) {
  const root = h('div', { class: 'markdown' });
  const lines = String(source || '').replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) { i += 1; continue; }
    const fence = /^\s*(```|~~~)/.exec(line);
    if (fence) {
      const body = [];
      i += 1;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) { body.push(lines[i]); i += 1; }
      i += 1;
      root.appendChild(h('pre', {}, h('code', {}, body.join('\n'))));
      continue;
    }
    const heading = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (heading) {
      root.appendChild(h(`h${Math.min(heading[1].length + 1, 6)}`, {}, inline(heading[2])));
      i += 1;
      continue;
    }
    if (/^\s*([-*_])(\s*\1){2,}\s*$/.test(line)) { root.appendChild(h('hr')); i += 1; continue; }
    if (/^\s*>/.test(line)) {
      const body = [];
      while (i < lines.length && /^\s*>/.test(lines[i])) { body.push(lines[i].replace(/^\s*>\s?/, '')); i += 1; }
      root.appendChild(h('blockquote', {}, [...renderMarkdown(body.join('\n')).childNodes]));
      continue;
    }
    const item = /^\s*([-*+]|\d{1,9}[.)])\s+/.exec(line);
    if (item) {
      const ordered = /\d/.test(item[1]);
      const list = h(ordered ? 'ol' : 'ul');
      while (i < lines.length) {
        const m = /^\s*([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(lines[i]);
        if (!m || /\d/.test(m[1]) !== ordered) break;
        const text = [m[2]];
        i += 1;
        // Indented continuation lines belong to the item.
        while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s*([-*+]|\d{1,9}[.)])\s+/.test(lines[i])) {
          text.push(lines[i].trim());
          i += 1;
        }
        list.appendChild(h('li', {}, inline(text.join(' '))));
      }
      root.appendChild(list);
      continue;
    }
    // A paragraph runs to a blank line or the start of another block; its
    // first line is always taken, so the loop always moves on.
    const para = [line.trim()];
    i += 1;
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !/^(#{1,6}\s|\s*(```|~~~)|\s*>|\s*([-*+]|\d{1,9}[.)])\s+)/.test(lines[i])) {
      para.push(lines[i].trim());
      i += 1;
    }
    root.appendChild(h('p', {}, inline(para.join(' '))));
  }
  return root;
}

// Inline spans: `code`, **strong**, *em* / _em_, [text](url).
const inlinePattern = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s](?:[^*]*[^*\s])?)\*|\b_([^_\s](?:[^_]*[^_\s])?)_\b|\[([^\]]+)\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g;

function inline(text) {
  const out = [];
  let last = 0;
  // matchAll works on its own copy of the pattern, so the recursion for
  // nested spans cannot disturb this loop's position.
  for (const m of text.matchAll(inlinePattern)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[2] !== undefined) out.push(h('code', {}, m[2]));
    else if (m[3] !== undefined || m[4] !== undefined) out.push(h('strong', {}, inline(m[3] ?? m[4])));
    else if (m[5] !== undefined || m[6] !== undefined) out.push(h('em', {}, inline(m[5] ?? m[6])));
    else out.push(link(m[7], m[8]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

function link(text, href) {
  let url;
  try { url = new URL(href); } catch { url = null; }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) return `${text} (${href})`;
  return h('a', { href: url.href, rel: 'noopener noreferrer', target: '_blank' }, inline(text));
}
