// How a task run shows: its status, progress as it arrives, the agent's
// answer, its error, and its artifacts (downloads, Markdown rendered, images
// shown). Used by the chat and by the task page.

import { h } from './dom.js';
import { bytes, statusLabel, outputText, runErrorText } from './format.js';
import { renderMarkdown } from './markdown.js';

export function statusBadge(status) {
  return h('span', { class: 'badge', dataset: { status } }, statusLabel(status));
}

// ProgressLog keeps the progress messages of one run once each, in the
// order they were reported (events replayed from history may arrive after
// the latest progress was read).
export class ProgressLog {
  constructor() { this.messages = []; }

  // add records a run's progress of the moment; it reports whether it was new.
  add(run) {
    const p = run && run.progress;
    if (!p || !p.message) return false;
    const key = `${p.updated_at}|${p.message}`;
    if (this.messages.some((m) => m.key === key)) return false;
    const at = new Date(p.updated_at).getTime() || 0;
    const entry = { key, at, message: p.message, percent: p.percent };
    const i = this.messages.findIndex((m) => m.at > at);
    if (i < 0) this.messages.push(entry);
    else this.messages.splice(i, 0, entry);
    return true;
  }

  // render shows the messages and a bar with the newest percentage while
  // the run works. A run that ended, or waits for an answer, shows its
  // result instead: the task page (full) keeps the messages as its record,
  // the chat drops them.
  render(full, status) {
    const working = status === 'pending' || status === 'running';
    if (!working && !full) return [];
    const last = this.messages[this.messages.length - 1];
    const list = h('ul', { class: `progress-log${full ? ' full' : ''}`, 'aria-label': 'Progress' },
      this.messages.map((m) => h('li', {}, m.message)));
    const bar = working && last && typeof last.percent === 'number'
      ? h('progress', { max: '100', value: String(last.percent), 'aria-label': `Progress ${Math.round(last.percent)} percent` })
      : null;
    return [list, bar];
  }
}

// runResult renders what a run produced or why it did not.
export function runResult(run) {
  const parts = [];
  const text = outputText(run);
  if (text) parts.push(h('div', { class: 'output' }, renderMarkdown(text)));
  if (run.error && run.status !== 'completed') {
    parts.push(h('p', { class: run.status === 'canceled' ? 'notice' : 'form-error' }, runErrorText(run.error)));
  }
  if (run.artifacts && run.artifacts.length) parts.push(artifactList(run.artifacts));
  return parts;
}

const previews = new Map();

// artifactList shows each artifact with a download link and, for Markdown,
// images and short text, the content itself.
export function artifactList(artifacts) {
  return h('ul', { class: 'artifacts', 'aria-label': 'Artifacts' }, artifacts.map((a) => {
    const name = a.filename.split('/').pop();
    const href = `/artifacts/${encodeURIComponent(a.artifact_id)}/content`;
    return h('li', { class: 'artifact', dataset: { artifactId: a.artifact_id } },
      h('div', { class: 'row' },
        h('strong', {}, a.title || a.filename),
        h('span', { class: 'muted small' }, a.title ? `${a.filename} · ${bytes(a.size)}` : bytes(a.size)),
        h('a', { class: 'button small', href, download: name, 'aria-label': `Download ${a.filename}` }, 'Download')),
      preview(a, href));
  }));
}

function preview(a, href) {
  if (previews.has(a.artifact_id)) return previews.get(a.artifact_id);
  const mt = (a.mime_type || '').split(';')[0].trim().toLowerCase();
  let el = null;
  if (['image/png', 'image/jpeg', 'image/gif', 'image/webp'].includes(mt)) {
    el = h('img', { src: href, alt: a.title || a.filename, loading: 'lazy' });
  } else if (mt === 'text/markdown' || /\.(md|markdown)$/i.test(a.filename) || mt === 'text/plain') {
    el = h('div', { class: 'preview' }, h('p', { class: 'muted small' }, 'Loading preview…'));
    const markdown = mt !== 'text/plain' || /\.(md|markdown)$/i.test(a.filename);
    loadText(el, href, a.size, markdown);
  }
  if (el) previews.set(a.artifact_id, el);
  return el;
}

async function loadText(el, href, size, markdown) {
  if (size > 512 * 1024) {
    el.replaceChildren(h('p', { class: 'muted small' }, 'Too large to preview: download it instead.'));
    return;
  }
  try {
    const resp = await fetch(href, { credentials: 'same-origin' });
    if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
    const text = await resp.text();
    el.replaceChildren(markdown ? renderMarkdown(text) : h('pre', {}, text));
  } catch {
    el.replaceChildren(h('p', { class: 'muted small' }, 'The preview could not be loaded; the download link still works.'));
    // Try again the next time the run is shown (the platform may be back).
    for (const [key, value] of previews) if (value === el) previews.delete(key);
  }
}
