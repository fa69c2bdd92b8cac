// Runs the published @ag-ui/client HttpAgent against an AG-UI endpoint and prints,
// as one JSON object on stdout, the messages and state the TypeScript client ends
// with, the event types it delivered, and the warnings it logged.
//
// usage: node agui_client.mjs URL THREAD_ID RUN_ID
import { HttpAgent } from "@ag-ui/client";

const [url, threadId, runId] = process.argv.slice(2);
const warnings = [];
const originalWarn = console.warn;
console.warn = (...args) => warnings.push(args.map(String).join(" "));

const agent = new HttpAgent({ url, threadId });
const eventTypes = [];
let runError = null;
try {
  await agent.runAgent(
    { runId },
    {
      onEvent: ({ event }) => {
        eventTypes.push(event.type);
      },
      onRunErrorEvent: ({ event }) => {
        runError = event.message;
      },
    },
  );
  console.warn = originalWarn;
  process.stdout.write(
    JSON.stringify({ messages: agent.messages, state: agent.state, eventTypes, warnings, runError }) +
      "\n",
  );
} catch (error) {
  console.warn = originalWarn;
  process.stdout.write(JSON.stringify({ error: String(error), eventTypes, warnings }) + "\n");
  process.exit(1);
}
