// The A2A JavaScript SDK's client against `flow serve FILE --a2a` (tests/protocols/test_real_clients.py):
// fetches the agent card, sends a message, streams one, answers an input-required question, gets a
// task and cancels one, sending the bearer token on every request. Prints what it saw as one JSON
// object; the Python test judges it.
//
//     node a2a_client.mjs URL        (the token in $FLOW_TEST_TOKEN)
import { randomUUID } from "node:crypto";
import { Role, TaskState } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  createAuthenticatingFetchWithRetry,
} from "@a2a-js/sdk/client";

const [url] = process.argv.slice(2);
const token = process.env.FLOW_TEST_TOKEN;
const authFetch = createAuthenticatingFetchWithRetry(fetch, {
  headers: async () => ({ Authorization: `Bearer ${token}` }),
  shouldRetryWithHeaders: async () => undefined,
});
const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authFetch }),
  }),
);

const data = (value) => ({ content: { $case: "data", value }, metadata: undefined, filename: "", mediaType: "" });
const text = (value) => ({ content: { $case: "text", value }, metadata: undefined, filename: "", mediaType: "" });
const request = (parts, task) => ({
  tenant: "",
  message: {
    messageId: randomUUID(), contextId: task?.contextId ?? "", taskId: task?.id ?? "", role: Role.ROLE_USER,
    parts, metadata: undefined, extensions: [], referenceTaskIds: [],
  },
  configuration: undefined,
  metadata: undefined,
});
const run = (workflow, input) => request([data({ workflow, input })]);
const stateName = (state) => TaskState[state];
const partValue = (part) => part?.content?.value;
const summary = (task) => ({
  id: task.id,
  state: stateName(task.status?.state),
  message: partValue(task.status?.message?.parts?.[0]),
  artifacts: Object.fromEntries(task.artifacts.map((a) => [a.name, partValue(a.parts[0])])),
});

const client = await factory.createFromUrl(url);
const card = await client.getAgentCard();
const report = {
  card: { name: card.name, skills: card.skills.map((s) => s.id), streaming: card.capabilities?.streaming,
          schemes: Object.keys(card.securitySchemes ?? {}) },
};

// a message, answered when the run ends
report.sent = summary(await client.sendMessage(run("greet", { name: "Ada" })));

// a stream: the task, its status updates, its artifacts
report.streamed = [];
for await (const event of client.sendMessageStream(run("greet", { name: "Ada" }))) {
  const { $case, value } = event.payload;
  if ($case === "statusUpdate") {
    report.streamed.push({ kind: $case, state: stateName(value.status.state), text: partValue(value.status.message?.parts?.[0]) });
  } else if ($case === "artifactUpdate") {
    report.streamed.push({ kind: $case, name: value.artifact.name });
  } else {
    report.streamed.push({ kind: $case, state: stateName(value.status?.state) });
  }
}

// a question: the task waits in input-required; the reply on the task resumes the run
const asking = await client.sendMessage(run("remove", { item: "x" }));
report.asked = summary(asking);
report.waiting = summary(await client.getTask({ tenant: "", id: asking.id }));
report.answered = summary(await client.sendMessage(request([text("yes")], asking)));
report.got = summary(await client.getTask({ tenant: "", id: asking.id }));

// a cancel: a long run, stopped; then the server takes the next task
const stream = client.sendMessageStream(run("wait_long", {}));
const first = (await stream.next()).value.payload.value;
report.cancelled = summary(await client.cancelTask({ tenant: "", id: first.id, metadata: undefined }));
await stream.return(undefined);
report.afterCancel = summary(await client.getTask({ tenant: "", id: first.id }));
report.next = summary(await client.sendMessage(run("words", { text: "a b" })));

process.stdout.write(JSON.stringify(report) + "\n");
