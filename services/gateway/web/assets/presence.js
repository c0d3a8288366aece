// What people see about an agent's runtime (seed 001 §6): online or not,
// the agent host's name, the device it runs on, its last heartbeat.

import { h } from './dom.js';
import { time } from './format.js';

// presence picks the runtime that speaks for the agent: the active one
// (the API lists it first), else the most recent.
export function presence(runtimes) {
  if (!runtimes || runtimes.length === 0) return { status: 'never', runtime: null };
  const active = runtimes.find((r) => r.state === 'active');
  if (!active) return { status: 'disconnected', runtime: runtimes[0] };
  const online = active.status === 'online';
  // Online but not ready: its local adapter does not answer, so it claims
  // nothing until the adapter is back.
  return { status: online ? 'online' : 'offline', notReady: online && !!active.not_ready, runtime: active };
}

const words = {
  online: 'Online',
  offline: 'Offline',
  never: 'Not connected yet',
  disconnected: 'Disconnected',
};

// presenceLine renders the dot and the words; loading keeps the line's
// height while the runtimes are still being read.
export function presenceLine(state, loading = false) {
  if (loading) {
    return h('div', { class: 'presence' },
      h('p', { class: 'status-line' }, h('span', { class: 'dot', 'aria-hidden': 'true' }), h('span', { class: 'muted' }, 'Checking…')),
      h('p', { class: 'muted small' }, '\u00a0'));
  }
  const rt = state.runtime;
  const dotStatus = state.notReady ? 'notready' : state.status === 'online' ? 'online' : state.status === 'never' ? 'never' : 'offline';
  const parts = [];
  if (rt && state.status !== 'disconnected') {
    parts.push(h('span', { class: 'host-label' }, rt.host_label || 'Custom Agent'));
    if (rt.device_name) parts.push(h('span', { class: 'device' }, `running on ${rt.device_name}`));
  }
  let detail = '\u00a0';
  if (rt && rt.last_heartbeat_at && state.status !== 'disconnected') detail = `Last heartbeat ${time(rt.last_heartbeat_at)}`;
  else if (rt && state.status === 'offline') detail = 'No heartbeat yet';
  else if (state.status === 'disconnected') detail = 'Its machine was disconnected: connect it again with a new code.';
  if (state.notReady) detail = 'Its local adapter does not answer: it takes no tasks until the adapter is back.';
  return h('div', { class: 'presence', dataset: { status: state.status } },
    h('p', { class: 'status-line' },
      h('span', { class: 'dot', dataset: { status: dotStatus }, 'aria-hidden': 'true' }),
      h('span', { class: 'status-word' }, state.notReady ? 'Online, not ready' : words[state.status]),
      parts.flatMap((p) => [h('span', { 'aria-hidden': 'true', class: 'muted' }, '·'), p])),
    h('p', { class: 'muted small' }, detail));
}
