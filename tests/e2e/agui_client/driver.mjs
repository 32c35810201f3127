// Drives the official @ag-ui/client HttpAgent against a checkflow server for tests/e2e.
//
//   node driver.mjs <base-url> <scenario> [input-json]
//
// Prints exactly one JSON line on stdout: {ok, scenario, threadId, runs, messages,
// pendingInterrupts, errors}. Each entry of `runs` records one runAgent() call: its runId,
// the event types the client saw (after its own verifier), the RUN_ERROR events, the
// RUN_FINISHED outcome, the MESSAGES_SNAPSHOT message lists (`snapshots`), the text deltas
// (`deltas`), each event's `timestamp` as the client read it (`stamps`: [type, timestamp]),
// the agent's state after each STATE_SNAPSHOT or STATE_DELTA the client applied itself
// (`states`, with the event type) and at the end (`state`), the client's warnings
// (`warnings`: a patch it could not apply says so there), and the rejection (HTTP status +
// payload) if runAgent() threw.
// The pytest side asserts on that line; this script decides nothing about pass or fail.
//
// `input` (all optional): threadId, text, texts, answers ([{status, payload}] in interrupt
// order), state (a file to save the agent to, or to load it from), gates (the server's gate
// folder), hold (a gate name), headers, steps (the `script` scenario's runs, see `step`).
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const [baseUrl, scenario, rawInput] = process.argv.slice(2);
const input = rawInput ? JSON.parse(rawInput) : {};
const url = `${baseUrl.replace(/\/$/, "")}${input.path ?? "/agui"}`;
const errors = [];

function makeAgent(threadId, saved) {
  const agent = new HttpAgent({
    url,
    threadId: threadId ?? saved?.threadId ?? randomUUID(),
    initialMessages: saved?.messages ?? [],
    headers: input.headers ?? {},
  });
  if (saved?.pendingInterrupts) agent.pendingInterrupts = saved.pendingInterrupts;
  return agent;
}

function userMessage(text) {
  return { id: randomUUID(), role: "user", content: text };
}

async function run(agent, parameters = {}, startedMarker = undefined, textMarker = undefined) {
  const runId = parameters.runId ?? randomUUID();
  const record = { runId, events: [], runErrors: [], outcome: null, rejected: null,
                   snapshots: [], deltas: [], stamps: [], states: [], warnings: [] };
  let applying = null;
  const subscriber = {
    onEvent: ({ event }) => {
      record.events.push(event.type);
      record.stamps.push([event.type, event.timestamp ?? null]);
      applying = event.type;
    },
    onStateChanged: ({ state }) => {
      record.states.push([applying, structuredClone(state)]);
    },
    onRunStartedEvent: () => {
      if (startedMarker) writeFileSync(startedMarker, "started");
    },
    onMessagesSnapshotEvent: ({ event }) => {
      record.snapshots.push(event.messages);
    },
    onTextMessageContentEvent: ({ event }) => {
      record.deltas.push(event.delta);
      if (textMarker) writeFileSync(textMarker, event.delta);
    },
    onRunErrorEvent: ({ event }) => {
      record.runErrors.push({ code: event.code ?? null, message: event.message });
    },
    onRunFinishedEvent: ({ event }) => {
      record.outcome = event.outcome ?? null;
    },
  };
  const warn = console.warn;
  console.warn = (...args) => {
    record.warnings.push(args.map(String).join(" "));
    warn(...args);
  };
  try {
    const result = await agent.runAgent({ ...parameters, runId }, subscriber);
    record.newMessages = result.newMessages;
  } catch (error) {
    record.rejected = {
      message: String(error?.message ?? error),
      status: error?.status ?? null,
      payload: error?.payload ?? null,
    };
  }
  console.warn = warn;
  record.pendingInterrupts = agent.pendingInterrupts;
  record.state = agent.state;
  return record;
}

function answersFor(agent, answers) {
  const responses = {};
  agent.pendingInterrupts.forEach((interrupt, index) => {
    const answer = answers[index] ?? { status: "resolved", payload: true };
    responses[interrupt.id] = answer;
  });
  return buildResumeArray(agent.pendingInterrupts, responses);
}

function save(agent) {
  if (!input.state) return;
  const saved = {
    threadId: agent.threadId,
    messages: agent.messages,
    pendingInterrupts: agent.pendingInterrupts,
  };
  writeFileSync(input.state, JSON.stringify(saved));
}

function load() {
  if (!input.state || !existsSync(input.state)) return undefined;
  return JSON.parse(readFileSync(input.state, "utf8"));
}

async function waitForFile(path, seconds = 30) {
  const deadline = Date.now() + seconds * 1000;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`gate file ${path} never appeared`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

// One step of the `script` scenario: the run's messages (`messages` replaces the agent's,
// `add` appends one user message {id?, text}), its `runId`, `resume` ("pending": answer the
// agent's open interrupts with `answers`; or a raw resume[] array), `forwardedProps`, and
// `started` (a file written once RUN_STARTED arrives, so a test knows the stream is open),
// `text` (a file written at each TEXT_MESSAGE_CONTENT, holding its delta), `state` (the
// agent's state to send: `agent.setState`, replacing its copy; `patch` merges keys into it),
// `tools` (the run's declared tools), `tool` (append a tool message {content, toolCallId?,
// id?}; the call defaults to the first pending interrupt's toolCallId).
async function step(agent, spec) {
  if (spec.messages) agent.setMessages(spec.messages);
  if (spec.add) agent.addMessage({ ...userMessage(spec.add.text), ...(spec.add.id && { id: spec.add.id }) });
  if (spec.tool) {
    const toolCallId = spec.tool.toolCallId ?? agent.pendingInterrupts[0]?.toolCallId;
    agent.addMessage({ id: spec.tool.id ?? randomUUID(), role: "tool", toolCallId,
                       content: spec.tool.content });
  }
  if (spec.pending) agent.pendingInterrupts = spec.pending;
  if (spec.state) agent.setState(spec.state);
  if (spec.patch) agent.setState({ ...agent.state, ...spec.patch });
  const parameters = {};
  if (spec.tools) parameters.tools = spec.tools;
  if (spec.runId) parameters.runId = spec.runId;
  if (spec.forwardedProps) parameters.forwardedProps = spec.forwardedProps;
  if (spec.resume === "pending") parameters.resume = answersFor(agent, spec.answers ?? []);
  else if (spec.resume) parameters.resume = spec.resume;
  return run(agent, parameters, spec.started, spec.text);
}

const scenarios = {
  // Runs `steps` in order on one agent (saved/loaded with `state` when given).
  async script() {
    const agent = makeAgent(input.threadId, load());
    const runs = [];
    for (const spec of input.steps ?? []) runs.push(await step(agent, spec));
    save(agent);
    return { agent, runs };
  },
  // One turn: a new user message, then save the agent (its interrupts too) if asked.
  async turn() {
    const agent = makeAgent(input.threadId, load());
    agent.addMessage(userMessage(input.text ?? "hello"));
    const runs = [await run(agent)];
    save(agent);
    return { agent, runs };
  },
  // Answer the saved agent's open interrupts with the client's resume helper, new runId.
  async resume() {
    const agent = makeAgent(input.threadId, load());
    const resume = answersFor(agent, input.answers ?? []);
    const runs = [await run(agent, { resume })];
    save(agent);
    return { agent, runs };
  },
  // Several turns on one agent, one per text (the client resends the whole history).
  async turns() {
    const agent = makeAgent(input.threadId, load());
    const runs = [];
    for (const text of input.texts ?? ["one", "two"]) {
      agent.addMessage(userMessage(text));
      runs.push(await run(agent));
    }
    save(agent);
    return { agent, runs };
  },
  // A turn that pauses, then one resume call answering every interrupt.
  async "pause-resume"() {
    const agent = makeAgent(input.threadId, undefined);
    agent.addMessage(userMessage(input.text ?? "hello"));
    const runs = [await run(agent)];
    runs.push(await run(agent, { resume: answersFor(agent, input.answers ?? []) }));
    return { agent, runs };
  },
  // Two agents on two threads, interleaved; each must see only its own turns.
  async isolation() {
    const first = makeAgent(undefined, undefined);
    const second = makeAgent(undefined, undefined);
    first.addMessage(userMessage(input.texts?.[0] ?? "first"));
    second.addMessage(userMessage(input.texts?.[1] ?? "second"));
    const runs = await Promise.all([run(first), run(second)]);
    return {
      agent: first,
      runs,
      extra: {
        threads: [first.threadId, second.threadId],
        messagesByThread: [first.messages, second.messages],
      },
    };
  },
  // A run held on a server gate, and a second agent on the same thread meanwhile (refused).
  async busy() {
    const threadId = input.threadId ?? randomUUID();
    const holder = makeAgent(threadId, undefined);
    holder.addMessage(userMessage(`hold:${input.hold}`));
    const held = run(holder);
    await waitForFile(`${input.gates}/${input.hold}.entered`);
    const other = makeAgent(threadId, undefined);
    other.addMessage(userMessage("meanwhile"));
    const refused = await run(other);
    writeFileSync(`${input.gates}/${input.hold}.release`, "go");
    const runs = [await held, refused];
    return { agent: holder, runs };
  },
};

async function main() {
  const chosen = scenarios[scenario];
  if (!chosen) throw new Error(`unknown scenario ${scenario}`);
  const { agent, runs, extra } = await chosen();
  return {
    ok: true,
    scenario,
    threadId: agent.threadId,
    runs,
    messages: agent.messages,
    pendingInterrupts: agent.pendingInterrupts,
    state: agent.state,
    errors,
    ...(extra ?? {}),
  };
}

const origError = console.error;
console.error = (...args) => {
  errors.push(args.map((a) => (a instanceof Error ? a.message : String(a))).join(" "));
  origError(...args);
};

main()
  .then((result) => {
    process.stdout.write(`${JSON.stringify(result)}\n`);
  })
  .catch((error) => {
    process.stdout.write(
      `${JSON.stringify({ ok: false, scenario, error: String(error?.stack ?? error), errors })}\n`,
    );
  });
