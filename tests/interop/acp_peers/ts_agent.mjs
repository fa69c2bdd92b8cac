// An ACP v2 agent written with the published TypeScript SDK's experimental/v2 entry
// point, serving one client on stdio. It plays scenario.json: each prompt's turn
// (a plan, a tool call that asks permission and shows a diff, a tool call running
// a terminal; or a turn the client cancels while its permission request is
// pending: on `session/cancel` it cancels that request with `$/cancel_request` and
// waits for the client's `cancelled` answer), and on `session/resume` replays what
// it kept.
//
// When stdin ends it writes its own view of the session (what it sent, folded by
// view.mjs) as JSON to the file named by its first argument.
//
// With --listen it serves over the SDK's experimental transports instead (Streamable
// HTTP and WebSocket at /acp of a free port of 127.0.0.1; it prints `LISTENING <port>`,
// writes its view every 100 ms and on SIGTERM).
//
// usage: node ts_agent.mjs VIEW_PATH [--listen]
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { SessionView } from "./view.mjs";

const [viewPath] = process.argv.slice(2);
const scenario = JSON.parse(readFileSync(new URL("./scenario.json", import.meta.url), "utf8"));
const view = new SessionView();
const history = []; // the updates kept for replay (state snapshots are not history)
const record = { permissions: [], stopReasons: [], methods: [], errors: [], cancelRequests: [] };
let sessions = 0;
let turns = 0;
let lastStop = null;
let cancelRequested = () => {};
const cancelled = new Promise((resolve) => (cancelRequested = resolve));
// the permission requests of the running turn: session/cancel cancels each with
// $/cancel_request (the SDK sends it when the request's cancellationSignal aborts) and
// still waits for the client's answer, which must then be `cancelled`
const pendingPermissions = new Map();

async function send(client, sessionId, update, { retain = true } = {}) {
  await client.notify(acp.methods.client.session.update, { sessionId, update });
  view.apply(update);
  if (retain) history.push(update);
}

async function ask(client, sessionId, { toolCallId, title, expect }) {
  const abort = new AbortController();
  pendingPermissions.set(toolCallId, abort);
  const params = {
    sessionId,
    title,
    subject: { type: "tool_call", toolCall: { toolCallId } },
    options: scenario.options,
  };
  const request = client.request(acp.methods.client.session.requestPermission, params, {
    cancellationSignal: abort.signal,
  });
  // a turn the client cancels: both the cancellation and the `cancelled` answer must come
  const [response] = await Promise.all([request, expect === "cancelled" ? cancelled : null]);
  pendingPermissions.delete(toolCallId);
  const { outcome } = response;
  const seen = outcome.outcome === "selected" ? outcome.optionId : outcome.outcome;
  record.permissions.push({ toolCallId, outcome: seen });
  if (seen !== expect) record.errors.push(`${toolCallId}: permission answered ${seen}, not ${expect}`);
}

async function play(client, sessionId, steps) {
  for (const step of steps) {
    if (step.send) await send(client, sessionId, step.send);
    else if (step.ask) await ask(client, sessionId, step.ask);
    else if (step.idle) {
      const idle = { sessionUpdate: "state_update", state: "idle", stopReason: step.idle };
      await send(client, sessionId, idle, { retain: false });
      record.stopReasons.push(step.idle);
      lastStop = step.idle;
    } else record.errors.push(`unknown step ${JSON.stringify(step)}`);
  }
}

const app = acp
  .agent({ name: "ts-interop-agent" })
  .onRequest(acp.methods.agent.initialize, () => {
    record.methods.push("initialize");
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: "ts-interop-agent", version: "1.0.0" },
      capabilities: {},
    };
  })
  .onRequest(acp.methods.agent.session.new, () => {
    record.methods.push("session/new");
    sessions += 1;
    return { sessionId: `ts-session-${sessions}` };
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    record.methods.push("session/prompt");
    turns += 1;
    const { sessionId } = params;
    const messageId = `u${turns}`;
    const text = params.prompt.map((block) => block.text ?? "").join("");
    const steps = scenario.turns[text];
    if (steps === undefined) throw acp.RequestError.invalidParams({ prompt: text }, "no such turn");
    await send(client, sessionId, { sessionUpdate: "state_update", state: "running" }, { retain: false });
    await send(client, sessionId, { sessionUpdate: "user_message", messageId, content: params.prompt });
    await play(client, sessionId, steps);
    return { messageId };
  })
  .onNotification(acp.methods.agent.session.cancel, () => {
    record.methods.push("session/cancel");
    for (const [toolCallId, abort] of pendingPermissions) {
      record.cancelRequests.push(toolCallId);
      abort.abort();
    }
    cancelRequested();
  })
  .onRequest(acp.methods.agent.session.close, () => {
    record.methods.push("session/close");
    return {};
  })
  .onRequest(acp.methods.agent.session.resume, async ({ params, client }) => {
    record.methods.push("session/resume");
    const notify = (update) =>
      client.notify(acp.methods.client.session.update, { sessionId: params.sessionId, update });
    if (params.replayFrom?.type === "start") {
      for (const update of history) await notify(update);
    }
    // the current-state snapshot every resume sends after replay, before its response
    await notify({ sessionUpdate: "state_update", state: "idle", stopReason: lastStop });
    return {};
  });

function save() {
  writeFileSync(viewPath, JSON.stringify({ view: view.toJSON(), ...record }, null, 1));
}

if (process.argv.includes("--listen")) {
  // the SDK's experimental server: Streamable HTTP and WebSocket on /acp of a free port;
  // the view is written after each request it answers, and on SIGTERM
  const { createServer } = await import("node:http");
  const { WebSocketServer } = await import("ws");
  const { AcpServer } = await import("@agentclientprotocol/sdk/experimental/server");
  const node = await import("@agentclientprotocol/sdk/experimental/node");
  const server = new AcpServer({ agent: app });
  const onHttp = node.createNodeHttpHandler(server);
  const onUpgrade = node.createNodeWebSocketUpgradeHandler(
    server,
    new WebSocketServer({ noServer: true }),
  );
  const routed = (req) => new URL(req.url ?? "/", "http://x").pathname === "/acp";
  const http = createServer((req, res) => {
    if (routed(req)) onHttp(req, res);
    else res.writeHead(404).end();
  });
  http.on("upgrade", (req, socket, head) => {
    if (routed(req)) onUpgrade(req, socket, head);
    else socket.destroy();
  });
  setInterval(save, 100);
  process.on("SIGTERM", () => {
    save();
    process.exit(0);
  });
  http.listen(0, "127.0.0.1", () => console.log(`LISTENING ${http.address().port}`));
} else {
  const stream = acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
  const connection = app.connect(stream);
  await connection.closed;
  save();
}
