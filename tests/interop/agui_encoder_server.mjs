// An AG-UI agent over HTTP built on the published peer packages: each POST body is checked
// with @ag-ui/core's RunAgentInputSchema, the answer is encoded by @ag-ui/encoder's
// EventEncoder (content type chosen from the request's Accept header).
//
//   node agui_encoder_server.mjs      prints {"port": N}, then one JSON line per request:
//                                     {"path", "accept", "input", "sent": [event, ...]}
//
// Paths: /agent answers the last user message and counts the turns in the state;
// /cut sends the run's first events and then destroys the connection mid-run.
import http from "node:http";
import { EventType } from "@ag-ui/core";
import { RunAgentInputSchema } from "@ag-ui/core/schemas";
import { EventEncoder } from "@ag-ui/encoder";

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function script(input) {
  const users = input.messages.filter((m) => m.role === "user");
  const said = users.length ? String(users[users.length - 1].content) : "nothing";
  const turns = (input.state && input.state.turns) || 0;
  const ids = { threadId: input.threadId, runId: input.runId };
  const messageId = `answer-${input.runId}`;
  return [
    { type: EventType.RUN_STARTED, ...ids },
    { type: EventType.TEXT_MESSAGE_START, messageId, role: "assistant" },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: "You said: " },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId, delta: said },
    { type: EventType.TEXT_MESSAGE_END, messageId },
    { type: EventType.STATE_SNAPSHOT, snapshot: { turns, received: input.messages.length } },
    { type: EventType.STATE_DELTA, delta: [{ op: "replace", path: "/turns", value: turns + 1 }] },
    { type: EventType.RUN_FINISHED, ...ids },
  ];
}

async function answer(request, response, body) {
  const path = new URL(request.url, "http://localhost").pathname;
  const parsed = RunAgentInputSchema.safeParse(JSON.parse(body));
  const record = { path, accept: request.headers.accept ?? null, input: JSON.parse(body), sent: [] };
  if (!parsed.success) {
    response.writeHead(400, { "content-type": "application/json" });
    response.end(JSON.stringify({ error: "invalid-run-input", issues: parsed.error.issues }));
    record.refused = parsed.error.issues;
    console.log(JSON.stringify(record));
    return;
  }
  const encoder = new EventEncoder({ accept: request.headers.accept });
  response.writeHead(200, { "content-type": encoder.getContentType(), "cache-control": "no-cache" });
  const events = script(parsed.data);
  const sending = path === "/cut" ? events.slice(0, 3) : events;
  for (const event of sending) {
    const frame = encoder.encode(event);
    record.sent.push(JSON.parse(frame.slice("data: ".length)));
    response.write(frame);
    await pause(5);
  }
  console.log(JSON.stringify(record));
  if (path === "/cut") response.destroy();
  else response.end();
}

const server = http.createServer((request, response) => {
  let body = "";
  request.setEncoding("utf8");
  request.on("data", (piece) => (body += piece));
  request.on("end", () => {
    answer(request, response, body).catch((error) => {
      console.error(error);
      response.destroy();
    });
  });
});
server.listen(0, "127.0.0.1", () => console.log(JSON.stringify({ port: server.address().port })));
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
