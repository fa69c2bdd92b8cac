// The normalized view of an ACP v2 session that every peer script prints, folded
// from the `session/update` payloads (wire JSON) a side sent or received. It keeps
// only what the interop scenario touches; an update kind it has no rule for is
// listed in `unhandled`, never dropped silently. tests/interop/acp_side.py builds
// the same shape from agentproto's SessionState.

const RESETS = { kind: "other", status: "pending" };

function summary(item) {
  // a version-neutral summary of one tool call content item
  if (item.type === "content") return { type: "text", text: item.content?.text ?? null };
  if (item.type === "diff") return { type: "diff", paths: (item.changes ?? []).map((c) => c.path) };
  if (item.type === "terminal") return { type: "terminal", terminalId: item.terminalId };
  return { type: item.type };
}

export class SessionView {
  constructor() {
    this.toolCalls = {};
    this.plans = {};
    this.messages = [];
    this.terminals = {};
    this.state = null;
    this.unhandled = [];
  }

  apply(update) {
    const kind = update.sessionUpdate;
    if (kind === "tool_call_update") {
      const call = (this.toolCalls[update.toolCallId] ??= {
        title: null,
        kind: "other",
        status: "pending",
        content: [],
        locations: [],
      });
      for (const field of ["title", "kind", "status"]) {
        if (field in update) call[field] = update[field] ?? RESETS[field] ?? null;
      }
      if ("content" in update) call.content = (update.content ?? []).map(summary);
      if ("locations" in update) call.locations = (update.locations ?? []).map((l) => l.path);
    } else if (kind === "plan_update") {
      this.plans[update.plan.planId] = update.plan.entries.map(({ content, priority, status }) => ({
        content,
        priority,
        status,
      }));
    } else if (["user_message", "agent_message", "agent_thought"].includes(kind)) {
      this.message(kind, update.messageId).text = textOf(update.content ?? []);
    } else if (["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"].includes(kind)) {
      this.message(kind.replace(/_chunk$/, ""), update.messageId).text += textOf([update.content]);
    } else if (kind === "terminal_update") {
      const terminal = (this.terminals[update.terminalId] ??= {
        command: null,
        output: Buffer.alloc(0),
        exitCode: null,
      });
      if ("command" in update) terminal.command = update.command;
      if ("output" in update) terminal.output = Buffer.from(update.output?.data ?? "", "base64");
      if ("exitStatus" in update) terminal.exitCode = update.exitStatus?.exitCode ?? null;
    } else if (kind === "terminal_output_chunk") {
      // each chunk is decoded on its own and its bytes appended (never the base64 text)
      const terminal = this.terminals[update.terminalId];
      terminal.output = Buffer.concat([terminal.output, Buffer.from(update.data, "base64")]);
    } else if (kind === "state_update") {
      this.state = { state: update.state, stopReason: update.stopReason ?? null };
    } else {
      this.unhandled.push(kind);
    }
  }

  message(kind, id) {
    let found = this.messages.find((m) => m.kind === kind && m.id === id);
    if (found === undefined) {
      found = { kind, id, text: "" };
      this.messages.push(found);
    }
    return found;
  }

  toJSON() {
    return {
      toolCalls: this.toolCalls,
      plans: this.plans,
      messages: this.messages,
      terminals: Object.fromEntries(
        Object.entries(this.terminals).map(([id, t]) => [id, { ...t, output: t.output.toString("utf8") }]),
      ),
      state: this.state,
      unhandled: this.unhandled,
    };
  }
}

function textOf(blocks) {
  return blocks.map((b) => (b.type === "text" ? b.text : "")).join("");
}
