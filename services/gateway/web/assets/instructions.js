// Connection instructions: plain text a person pastes into the AI assistant
// on the machine where the agent runs (Claude Code, Codex…). The assistant
// installs the runtime and the adapter, pairs with the one-time code against
// this platform and starts the runtime. It follows seed 001's recovery rules:
// an existing profile reconnects without a code, and a broken connection is
// fixed by pairing the same agent again, never by creating a new agent.

import { hostByType } from './format.js';

export function connectionInstructions({ agent, code, expiresAt, apiBase, hostType }) {
  const host = hostByType(hostType);
  const expires = new Date(expiresAt);
  const until = `${expires.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })} (${expires.toISOString()})`;
  const pair = [`a2a-runtime pair ${code} --api-base ${apiBase} --local-executor-type ${host.type}`];
  if (host.endpoint) pair[0] += ` --local-agent-endpoint ${host.endpoint}`;
  return [
    `You are setting up A2A Mesh on this machine, so that my agent "${agent.name}" (agent id ${agent.agent_id}) can receive tasks from the platform at ${apiBase}. The agent host here is ${host.label}. Work through these steps in a terminal and tell me what happened after each one.`,
    '',
    'Rules: never print, log, copy or share the runtime token that pairing stores in ~/.a2a/runtime.json. Never create a new agent to fix a connection.',
    '',
    `1. Check for an existing connection: run \`a2a-runtime status\`. If it shows a profile for agent ${agent.agent_id} with api_base ${apiBase}, do not pair again: run \`a2a-runtime start\` and skip to step 7.`,
    '',
    '2. Install the programs if `a2a-runtime` or `a2a-adapter` is missing. The platform serves them for Linux and macOS (amd64, arm64) and checks their SHA-256; they go to ~/.local/bin, with no root and no Go needed (make sure ~/.local/bin is on PATH):',
    `   curl -fsSL ${apiBase}/install.sh | sh`,
    '',
    `3. ${host.prepare}`,
    host.provider !== 'command' ? `   Check it with: a2a-adapter doctor --provider ${host.provider}` : null,
    '',
    '4. Start the local adapter and keep it running (in its own terminal, or as a background process):',
    `   ${host.adapter}`,
    '',
    `5. Pair this machine with the agent, using this one-time code. It works once and expires at ${until}:`,
    `   ${pair[0]}`,
    '   If pairing answers "Invalid pairing token", the code was already used or has expired: ask me to generate a new connection code for this same agent on the web page.',
    '',
    '6. Start the runtime: `a2a-runtime start`. To keep it running in the background and after a reboot, use `a2a-runtime service install` instead.',
    '',
    '7. Confirm with `a2a-runtime status` that the agent is connected. The web page shows the agent online at the same moment.',
    '',
    'If the runtime later reports that its credential was revoked or is invalid, tell me: I will generate a new connection code for this same agent, and you pair again with it.',
  ].filter((line) => line !== null).join('\n');
}
