// A webhook receiver on loopback that checks every delivery with the official
// Standard Webhooks library, as a third-party receiver would. It prints one
// JSON line when listening ({"port":N}), reads the webhook's secret as the
// first line of its standard input (never printing it), prints {"ready":true},
// then one line per delivery ({"id","type","verified","error"}), answering 204
// to a verified delivery and 400 to any other.
import http from "node:http";
import readline from "node:readline";
import { Webhook } from "standardwebhooks";

let wh = null;

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    const line = { id: req.headers["webhook-id"] ?? "", verified: false };
    try {
      if (!wh) throw new Error("no secret yet");
      const event = wh.verify(body, req.headers);
      line.type = event.type ?? "";
      line.verified = true;
    } catch (err) {
      line.error = String(err && err.message ? err.message : err);
    }
    process.stdout.write(JSON.stringify(line) + "\n");
    res.writeHead(line.verified ? 204 : 400);
    res.end();
  });
});

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
  const rl = readline.createInterface({ input: process.stdin });
  rl.once("line", (secret) => {
    wh = new Webhook(secret.trim());
    process.stdout.write(JSON.stringify({ ready: true }) + "\n");
  });
});
