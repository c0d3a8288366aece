// Connection instructions: plain text a person pastes into the AI assistant
// on the machine where the agent runs (Claude Code, Codex…). The assistant
// installs the runtime and the adapter, pairs with the one-time code against
// this platform, naming the adapter the runtime runs, and starts the runtime. It follows seed 001's recovery rules:
// an existing profile reconnects without a code, and a broken connection is
// fixed by pairing the same agent again, never by creating a new agent.

import { hostByType } from './format.js';

export function connectionInstructions({ agent, code, expiresAt, apiBase, hostType }) {
  const host = hostByType(hostType);
  const expires = new Date(expiresAt);
  const until = `${expires.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })} (${expires.toISOString()})`;
  // The code goes to standard input, so it never shows in the process list.
  let pair = `echo ${code} | a2a-runtime pair --api-base ${apiBase} --local-executor-type ${host.type}`;
  if (host.endpoint) pair += ` --local-agent-endpoint ${host.endpoint}`;
  pair += ` --adapter ${host.provider}`;
  if (host.adapterArgs) pair += ` -- ${host.adapterArgs}`;
  // a2a-runtime start runs until stopped: an assistant's shell would wait
  // for it for ever, so it runs as a service, or in the background.
  const background = `nohup ${host.env ? `env ${host.env} ` : ''}a2a-runtime start >>~/.a2a/runtime.log 2>&1 &`;
  const start = host.env
    ? `\`${background}\` (a service does not see your shell's environment, which this host needs)`
    : `\`a2a-runtime service install\`, which runs it in the background now and after a reboot; where no service manager is available, \`${background}\``;
  return [
    `You are setting up A2A Mesh on this machine, so that my agent "${agent.name}" (agent id ${agent.agent_id}) can receive tasks from the platform at ${apiBase}. The agent host here is ${host.label}. Work through these steps in a terminal and tell me what happened after each one.`,
    '',
    'Rules: never print, log, copy or share the runtime token that pairing stores in ~/.a2a/runtime.json. Never create a new agent to fix a connection. Never run `a2a-runtime start` in the foreground: it keeps running until stopped, so your shell would not get its prompt back.',
    loopback(apiBase)
      ? `\nNote: the platform's address ${apiBase} is reachable only from the machine the platform runs on. If this is another machine, stop and tell me: the platform must be started with --public-url set to an address this machine can reach.`
      : null,
    '',
    '1. Install the programs if `a2a-runtime` or `a2a-adapter` is missing (check with `command -v a2a-runtime a2a-adapter`). The platform serves them and checks their SHA-256; they go to ~/.local/bin, with no root and no Go needed (make sure ~/.local/bin is on PATH):',
    `   curl -fsSL ${apiBase}/install.sh | sh`,
    '',
    `2. Check for an existing connection: run \`a2a-runtime status\`. If it shows a profile for agent ${agent.agent_id} with api_base ${apiBase}, do not pair again: start the runtime as step 5 says and skip to step 6.`,
    '',
    `3. ${host.prepare}`,
    host.provider !== 'command' ? `   Check it with: a2a-adapter doctor --provider ${host.provider}` : null,
    '',
    `4. Pair this machine with the agent, using this one-time code. It works once and expires at ${until}. With --adapter the runtime runs the local adapter (a2a-adapter --provider ${host.provider}) itself from now on:`,
    `   ${pair}`,
    '   If pairing answers "Invalid pairing token", the code was already used or has expired: ask me to generate a new connection code for this same agent on the web page.',
    '',
    `5. Start the runtime, which starts the adapter and starts it again if it stops: ${start}.`,
    '',
    '6. Confirm with `a2a-runtime status` that the agent is connected. The web page shows the agent online at the same moment.',
    '',
    'If the runtime later reports that its credential was revoked or is invalid, tell me: I will generate a new connection code for this same agent, and you pair again with it.',
  ].filter((line) => line !== null).join('\n');
}

// loopback reports whether url names this machine only (127.0.0.0/8, ::1,
// localhost): no other machine reaches a platform there.
function loopback(url) {
  let host;
  try {
    host = new URL(url).hostname;
  } catch {
    return false;
  }
  return host === 'localhost' || host === '[::1]' || host === '::1' || /^127\./.test(host);
}
