// Live updates: one EventSource per view on the platform's event stream. The
// browser resumes a dropped stream by itself with Last-Event-ID; when it
// gives up (the platform answered with an error while restarting), the
// stream is reopened after a pause from the last event seen. After any
// interruption the view refetches its state, since the platform may have
// changed meanwhile (a restart, events past the retention window).

import { loadSession } from './api.js';

const indicator = () => document.getElementById('live');

function showState(state) {
  const el = indicator();
  if (!el) return;
  el.dataset.state = state;
  el.textContent = { live: 'Live', reconnecting: 'Reconnecting…', idle: '' }[state] || '';
}

// Live follows /events with query (URLSearchParams or a plain object).
// onEvent receives each CloudEvent; onReconnect runs after an interruption.
export class Live {
  constructor(query, { onEvent, onReconnect, onSignedOut }) {
    this.query = new URLSearchParams(query);
    this.onEvent = onEvent;
    this.onReconnect = onReconnect || (() => {});
    this.onSignedOut = onSignedOut || (() => {});
    this.lastId = '';
    this.interrupted = false;
    this.stopped = false;
    this.delay = 1000;
    this.seen = new Set();
    this.timer = null;
    this.open();
  }

  open() {
    if (this.stopped) return;
    const q = new URLSearchParams(this.query);
    if (this.lastId) q.set('last_event_id', this.lastId);
    const es = new EventSource(`/events?${q}`);
    this.es = es;
    es.onopen = () => {
      if (this.es !== es) return;
      this.delay = 1000;
      showState('live');
      if (this.interrupted) {
        this.interrupted = false;
        this.onReconnect();
      }
    };
    es.onmessage = (m) => {
      if (this.es !== es) return;
      if (m.lastEventId) this.lastId = m.lastEventId;
      let ev;
      try { ev = JSON.parse(m.data); } catch { return; }
      // Delivery is at least once: an event id is handled once.
      if (ev.id && this.seen.has(ev.id)) return;
      if (ev.id) this.seen.add(ev.id);
      this.onEvent(ev);
    };
    es.onerror = () => {
      if (this.es !== es || this.stopped) return;
      this.interrupted = true;
      showState('reconnecting');
      if (es.readyState === EventSource.CLOSED) this.reopenLater();
    };
  }

  // reopenLater retries a stream the browser gave up on, backing off; a
  // session that ended stops it.
  reopenLater() {
    clearTimeout(this.timer);
    this.timer = setTimeout(async () => {
      if (this.stopped) return;
      try {
        if (!(await loadSession())) {
          this.stop();
          this.onSignedOut();
          return;
        }
      } catch {
        // Still unreachable: try again later.
        this.delay = Math.min(this.delay * 2, 10000);
        this.reopenLater();
        return;
      }
      this.open();
    }, this.delay);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.es) this.es.close();
    showState('idle');
  }
}
