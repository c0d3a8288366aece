// The official A2A JavaScript client, version 0.3 (@a2a-js/sdk 0.3.x),
// against an A2A Mesh agent: resolve the card, send, stream, get, cancel and
// set push configurations, over the transport asked for. Prints one JSON
// object with what it saw.
//
// Usage: A2A_API_KEY=... node v03.mjs <agent url> <push receiver url> <JSONRPC|HTTP+JSON>
// (the key travels in the environment, never on the command line).
import { randomUUID } from "node:crypto";
import * as sdk from "a2a-v03/client";
import { clientFactory, unknownTaskError } from "./client.mjs";

const [agentURL, pushURL, transport] = process.argv.slice(2);
const factory = clientFactory(sdk, transport);

const message = (text, extra = {}) => ({
  message: { kind: "message", messageId: randomUUID(), role: "user", parts: [{ kind: "text", text }], ...extra },
});
const text = (task) =>
  (task.artifacts || [])
    .flatMap((a) => a.parts)
    .filter((p) => p.kind === "text")
    .map((p) => p.text)
    .join("");

const out = { transport };
try {
  // The card path is resolved against the base like a relative link: the
  // agent's URL needs its trailing slash to keep its last segment.
  const client = await factory.createFromUrl(agentURL.replace(/\/?$/, "/"));
  const card = await client.getAgentCard();
  out.card = { name: card.name, protocolVersion: card.protocolVersion, url: card.url };

  const sent = await client.sendMessage(message("hello from js 0.3"));
  out.send = { kind: sent.kind, id: sent.id, state: sent.status.state, text: text(sent) };

  out.stream = [];
  for await (const ev of client.sendMessageStream(message("stream from js 0.3"))) {
    if (ev.kind === "task") out.stream.push("task:" + ev.status.state);
    if (ev.kind === "status-update") out.stream.push("status:" + ev.status.state);
    if (ev.kind === "artifact-update") out.stream.push("artifact:" + ev.artifact.parts.map((p) => p.text).join(""));
  }

  const got = await client.getTask({ id: sent.id, historyLength: 1 });
  out.get = { state: got.status.state, history: (got.history || []).length, text: text(got) };

  const waiting = await client.sendMessage({ ...message("wait in js 0.3"), configuration: { blocking: false } });
  for (let i = 0; i < 200; i++) {
    const t = await client.getTask({ id: waiting.id });
    if (t.status.state === "working") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const config = await client.setTaskPushNotificationConfig({
    taskId: waiting.id,
    pushNotificationConfig: { id: "js03", url: pushURL, token: "js-token-03" },
  });
  const configs = await client.listTaskPushNotificationConfig({ id: waiting.id });
  out.push = { id: config.pushNotificationConfig.id, listed: configs.length, task: waiting.id };

  const canceled = await client.cancelTask({ id: waiting.id });
  out.cancel = { state: canceled.status.state };

  out.unknownTask = await unknownTaskError(client);
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
}
console.log(JSON.stringify(out));
