// Words and numbers as people read them.

// time is a moment with its date, in the browser's language and time zone:
// a page may stay open past midnight, and a time without a date would then
// read as today's.
export function time(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  return d.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
}

export function bytes(n) {
  if (n === undefined || n === null) return '';
  if (n < 1024) return `${n} bytes`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

// countdown formats the time left until iso: "4:59".
export function countdown(iso) {
  const left = Math.max(0, Math.floor((new Date(iso).getTime() - Date.now()) / 1000));
  return `${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}`;
}

export const statuses = ['pending', 'running', 'input-required', 'approval-required', 'completed', 'failed', 'canceled'];

export function statusLabel(status) {
  return {
    pending: 'Waiting',
    running: 'Working',
    'input-required': 'Needs input',
    'approval-required': 'Needs approval',
    completed: 'Completed',
    failed: 'Failed',
    canceled: 'Canceled',
  }[status] || status;
}

export function terminal(status) {
  return status === 'completed' || status === 'failed' || status === 'canceled';
}

// conversation is a run's turns, oldest first: the request that started it,
// then each question the agent asked and the answer it got (the platform
// keeps them in input.history when a run waiting for input is answered),
// the latest input last. Each turn is { role: 'user' | 'agent', text }.
export function conversation(run) {
  const input = (run && run.input) || {};
  const history = Array.isArray(input.history) ? input.history : [];
  const turns = history
    .filter((t) => t && typeof t.text === 'string')
    .map((t) => ({ role: t.role === 'agent' ? 'agent' : 'user', text: t.text }));
  turns.push({ role: 'user', text: inputText(input) });
  return turns;
}

// inputText is the text of one turn's input, or the input itself as JSON
// when it has no text.
function inputText(input) {
  if (typeof input.text === 'string' && input.text.trim()) return input.text;
  const { history, ...rest } = input;
  return Object.keys(rest).length ? JSON.stringify(rest) : '';
}

// runText is the request that started a run, for titles and lists.
export function runText(run) {
  return conversation(run)[0].text;
}

export function excerpt(text, n = 90) {
  const s = String(text || '').replace(/\s+/g, ' ').trim();
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

// outputText is the readable part of a run's output.
export function outputText(run) {
  const out = run && run.output;
  if (!out) return '';
  if (typeof out.text === 'string') return out.text;
  if (typeof out.error === 'string') return '';
  return '';
}

// runErrorText says why a run failed, in words, then the platform's message.
export function runErrorText(err) {
  if (!err) return '';
  const why = {
    RUNTIME_LOST: 'The agent\'s machine stopped answering while it worked on this task (closed laptop, lost network or a stopped runtime).',
    DEADLINE_EXCEEDED: 'The task ran out of time.',
    CANCELED: 'The task was canceled.',
    ADAPTER_UNREACHABLE: 'The runtime could not reach the local adapter: is a2a-adapter running on the agent\'s machine?',
    ADAPTER_CONNECTION_LOST: 'The connection to the local adapter broke while it worked.',
    ADAPTER_TIMEOUT: 'The agent took longer than the runtime allows for one task.',
    ADAPTER_HTTP_ERROR: 'The local adapter answered with an error.',
    ADAPTER_INVALID_JSON: 'The local adapter answered something that is not JSON.',
    ADAPTER_INVALID_RESPONSE: 'The local adapter\'s answer was not in the expected shape.',
    ADAPTER_REPORTED_FAILURE: 'The agent reported that it failed.',
    ARTIFACT_WRITE_FAILED: 'The agent\'s files could not be stored on the platform.',
    RUNTIME_SHUTDOWN: 'The runtime was stopped while it worked on this task.',
  }[err.code];
  const detail = err.message ? err.message : '';
  return why ? (detail && detail !== why ? `${why} ${detail}` : why) : (detail || err.code);
}

// Agent hosts a runtime can drive (README "Agent hosts"), with what the
// connection instructions need for each: the adapter's provider and the
// arguments the runtime passes it, the environment start needs, and the
// adapter's endpoint when it is not the default.
export const hosts = [
  {
    type: 'claude_cli', label: 'Claude Code CLI', provider: 'claude',
    adapterArgs: '--permission-mode acceptEdits',
    prepare: 'Make sure Claude Code is installed and signed in: `npm install -g @anthropic-ai/claude-code`, then run `claude` once and use /login (or set ANTHROPIC_API_KEY where a2a-runtime start runs).',
  },
  {
    type: 'codex', label: 'Codex CLI', provider: 'codex',
    prepare: 'Make sure Codex is installed and signed in: `npm install -g @openai/codex`, then `codex login` (or set CODEX_API_KEY where a2a-runtime start runs).',
  },
  {
    type: 'gemini', label: 'Gemini CLI', provider: 'gemini',
    adapterArgs: '--approval-mode auto_edit',
    prepare: 'Make sure Gemini CLI is installed and signed in: `npm install -g @google/gemini-cli`, then set GEMINI_API_KEY or run `gemini` once to sign in.',
  },
  {
    type: 'cursor', label: 'Cursor Agent', provider: 'cursor',
    adapterArgs: '--force',
    prepare: 'Make sure Cursor Agent is installed and signed in: `curl https://cursor.com/install -fsS | bash`, then `cursor-agent login` (or set CURSOR_API_KEY).',
  },
  {
    type: 'hermes', label: 'Hermes Agent', provider: 'hermes',
    prepare: 'Make sure Hermes Agent is installed and set up: `curl -fsSL https://hermes-agent.nousresearch.com/install.sh | bash`, then `hermes setup`.',
  },
  {
    type: 'openclaw', label: 'OpenClaw', provider: 'openclaw',
    env: 'OPENCLAW_GATEWAY_TOKEN=<the gateway token>',
    endpoint: 'http://127.0.0.1:18790/run-task',
    prepare: 'Make sure the OpenClaw gateway runs (`openclaw gateway`) with its OpenAI-compatible endpoint enabled (gateway.http.endpoints.chatCompletions.enabled: true), and have its gateway token at hand. The gateway already uses port 18789, so the adapter listens on 18790. The adapter reads the token from OPENCLAW_GATEWAY_TOKEN: in the runtime\'s environment, or, for a runtime run as a service, from ~/.a2a/adapter.env (a line OPENCLAW_GATEWAY_TOKEN=<the token>, chmod 600).',
  },
  {
    type: 'custom', label: 'Custom Agent', provider: 'command',
    adapterArgs: '-- /path/to/your-agent-program',
    prepare: 'The agent is a program of your own: it reads the task text on standard input and prints its answer; files it writes to $A2A_OUTPUT_DIR are delivered as artifacts. (An adapter of your own serving POST /run-task on http://127.0.0.1:18789 works too: run it yourself and leave --adapter and what follows it out of the pair command.)',
  },
];

export function hostByType(type) {
  return hosts.find((x) => x.type === type) || hosts[hosts.length - 1];
}

// usageText is what a run (or a day) spent: "1,234 tokens in (200 cached),
// 56 out · $0.0123 · model".
export function usageText(u) {
  if (!u) return '';
  const n = (v) => Number(v || 0).toLocaleString();
  const parts = [`${n(u.input_tokens)} tokens in${u.cached_tokens ? ` (${n(u.cached_tokens)} cached)` : ''}, ${n(u.output_tokens)} out`];
  if (typeof u.cost_usd === 'number') parts.push(`$${u.cost_usd.toFixed(4)}`);
  if (u.model) parts.push(u.model);
  return parts.join(' · ');
}

// limitText is a budget's limit: "200,000 tokens", "$5.00", or both.
export function limitText(l) {
  if (!l) return '';
  const parts = [];
  if (l.tokens) parts.push(`${Number(l.tokens).toLocaleString()} tokens`);
  if (l.cost_usd) parts.push(`$${Number(l.cost_usd).toFixed(2)}`);
  return parts.join(' or ');
}
