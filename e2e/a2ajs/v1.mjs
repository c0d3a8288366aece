// The official A2A JavaScript client, version 1.x (@a2a-js/sdk 1.x),
// against an A2A Mesh agent: resolve the card, send, stream, get, list,
// cancel and set push configurations, over the transport asked for. Prints
// one JSON object with what it saw.
//
// Usage: A2A_API_KEY=... node v1.mjs <agent url> <push receiver url> <JSONRPC|HTTP+JSON>
// (the key travels in the environment, never on the command line).
import { randomUUID } from "node:crypto";
import { SendMessageRequest, taskStateToJSON } from "a2a-v1";
import * as sdk from "a2a-v1/client";
import { clientFactory, unknownTaskError } from "./client.mjs";

const [agentURL, pushURL, transport] = process.argv.slice(2);
const factory = clientFactory(sdk, transport);

const request = (text, configuration) =>
  SendMessageRequest.fromJSON({
    message: { messageId: randomUUID(), role: "ROLE_USER", parts: [{ text }] },
    ...(configuration ? { configuration } : {}),
  });
const state = (s) => taskStateToJSON(s);
const text = (task) =>
  (task.artifacts || [])
    .flatMap((a) => a.parts)
    .filter((p) => p.content && p.content.$case === "text")
    .map((p) => p.content.value)
    .join("");

const out = { transport };
try {
  // The card path is resolved against the base like a relative link: the
  // agent's URL needs its trailing slash to keep its last segment.
  const client = await factory.createFromUrl(agentURL.replace(/\/?$/, "/"));
  out.client = { protocolVersion: client.protocolVersion };

  const sent = await client.sendMessage(request("hello from js 1.x"));
  out.send = { id: sent.id, state: state(sent.status.state), text: text(sent) };

  out.stream = [];
  for await (const ev of client.sendMessageStream(request("stream from js 1.x"))) {
    const p = ev.payload || {};
    if (p.$case === "task") out.stream.push("task:" + state(p.value.status.state));
    if (p.$case === "statusUpdate") out.stream.push("status:" + state(p.value.status.state));
    if (p.$case === "artifactUpdate") out.stream.push("artifact:" + text({ artifacts: [p.value.artifact] }));
  }

  const got = await client.getTask({ id: sent.id, historyLength: 1 });
  out.get = { state: state(got.status.state), history: (got.history || []).length, text: text(got) };

  const list = await client.listTasks({ pageSize: 1 });
  out.list = { count: list.tasks.length, next: list.nextPageToken !== "" };

  const waiting = await client.sendMessage(request("wait in js 1.x", { returnImmediately: true }));
  for (let i = 0; i < 200; i++) {
    const t = await client.getTask({ id: waiting.id });
    if (state(t.status.state) === "TASK_STATE_WORKING") break;
    await new Promise((r) => setTimeout(r, 50));
  }
  const config = await client.createTaskPushNotificationConfig({
    taskId: waiting.id,
    id: "js1",
    url: pushURL,
    token: "js-token-1",
    authentication: { scheme: "Bearer", credentials: "js-credentials-1" },
  });
  const configs = await client.listTaskPushNotificationConfig({ taskId: waiting.id });
  out.push = { id: config.id, listed: configs.configs.length, task: waiting.id };

  const canceled = await client.cancelTask({ id: waiting.id });
  out.cancel = { state: state(canceled.status.state) };

  out.unknownTask = await unknownTaskError(client);
} catch (e) {
  out.error = String(e && e.stack ? e.stack : e);
}
console.log(JSON.stringify(out));
