// An ACP v2 client written with the published TypeScript SDK's experimental/v2 entry
// point. It spawns the agent command it is given, talks to it over the child's
// stdio and drives scenario.json: the turn "go" (allowing the permission it is
// asked), the turn "cancel me" (cancelling it when the permission request comes,
// then answering that request `cancelled` once the agent cancels it with
// `$/cancel_request`), then `session/close` and
// `session/resume` with replay from the start into a fresh view.
//
// It prints one JSON object on stdout: its live view and its replayed view (folded
// by view.mjs), the raw updates it received live, the permission outcomes it gave,
// the permission requests the agent cancelled, the stop reasons it saw and any error.
//
// usage: node ts_client.mjs -- AGENT_COMMAND...
//        node ts_client.mjs --url http://HOST:PORT/acp --transport http|ws
//        (a remote agent over the SDK's Streamable HTTP or WebSocket client; the ws://
//        URL is the http:// one's; agentExit is then null)
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk/experimental/v2";
import { SessionView } from "./view.mjs";

const command = process.argv.slice(process.argv.indexOf("--") + 1);
const scenario = JSON.parse(readFileSync(new URL("./scenario.json", import.meta.url), "utf8"));
const live = new SessionView();
const replayed = new SessionView();
const out = { updates: [], permissions: [], stopReasons: [], initialize: null, error: null };
out.cancelRequests = []; // the permission requests the agent cancelled with $/cancel_request
let target = live;
let cancelTurn = false;
let idle = () => {};

function nextIdle() {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no idle state_update within 30 s")), 30000);
    idle = () => {
      clearTimeout(timer);
      resolve();
    };
  });
}

const app = acp
  .client({ name: "ts-interop-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    const { update } = params;
    target.apply(update);
    if (target === live) out.updates.push(update);
    if (update.sessionUpdate === "state_update" && update.state === "idle") {
      // a resume snapshot is not a new completion
      if (target === live) out.stopReasons.push(update.stopReason ?? null);
      idle();
    }
  })
  .onRequest(acp.methods.client.session.requestPermission, async ({ params, agent, signal }) => {
    const toolCallId = params.subject?.toolCall?.toolCallId ?? null;
    if (cancelTurn) {
      // cancel the turn, then answer the request once the agent cancels it with
      // $/cancel_request (the SDK aborts the handler's signal), `cancelled`
      await agent.notify(acp.methods.agent.session.cancel, { sessionId: params.sessionId });
      const withdrawn = await new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), 10000);
        const done = () => {
          clearTimeout(timer);
          resolve(true);
        };
        if (signal.aborted) done();
        else signal.addEventListener("abort", done, { once: true });
      });
      if (withdrawn) out.cancelRequests.push(toolCallId);
      out.permissions.push({ toolCallId, outcome: "cancelled" });
      return { outcome: { outcome: "cancelled" } };
    }
    out.permissions.push({ toolCallId, outcome: "allow" });
    return { outcome: { outcome: "selected", optionId: "allow" } };
  });

// --url URL --transport http|ws: a remote agent, over the SDK's experimental transports
const urlAt = process.argv.indexOf("--url");
let child = null;
let stream;
let exited = Promise.resolve(null);
if (urlAt >= 0) {
  const url = process.argv[urlAt + 1];
  const transport = process.argv[process.argv.indexOf("--transport") + 1];
  if (transport === "ws") {
    const { WebSocket } = await import("ws"); // Node 20 has no global WebSocket
    const { createWebSocketStream } = await import("@agentclientprotocol/sdk/experimental/ws-client");
    stream = createWebSocketStream(url.replace(/^http/, "ws"), { WebSocket });
  } else {
    const { createHttpStream } = await import("@agentclientprotocol/sdk/experimental/http-client");
    stream = createHttpStream(url);
  }
} else {
  child = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
  stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
}

async function turn(ctx, sessionId, text) {
  const ended = nextIdle();
  await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] });
  await ended;
}

try {
  await app.connectWith(stream, async (ctx) => {
    out.initialize = await ctx.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION,
      info: { name: "ts-interop-client", version: "1.0.0" },
      capabilities: {},
    });
    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: scenario.cwd });
    await turn(ctx, sessionId, "go");
    cancelTurn = true;
    await turn(ctx, sessionId, "cancel me");
    cancelTurn = false;
    await ctx.request(acp.methods.agent.session.close, { sessionId });
    target = replayed;
    const snapshot = nextIdle(); // the current-state snapshot comes before the response
    await ctx.request(acp.methods.agent.session.resume, {
      sessionId,
      cwd: scenario.cwd,
      replayFrom: { type: "start" },
    });
    await snapshot;
    target = live;
  });
} catch (error) {
  out.error = String(error?.stack ?? error);
}
child?.stdin.end();
out.agentExit = await exited;
process.stdout.write(
  JSON.stringify({ view: live.toJSON(), replayed: replayed.toJSON(), ...out }) + "\n",
);
process.exit(out.error === null ? 0 : 1);
