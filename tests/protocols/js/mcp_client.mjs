// The MCP TypeScript SDK's client against `flow serve FILE --mcp --http` (tests/protocols/test_real_clients.py),
// on its schema-checking path: it lists the tools first (the client then checks each result's structured
// content against the tool's output schema), calls a workflow that fails and one that reports progress,
// sending the bearer token. Prints what it saw as one JSON object; the Python test judges it.
//
//     node mcp_client.mjs URL        (the token in $FLOW_TEST_TOKEN)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.FLOW_TEST_TOKEN}` } },
});
const client = new Client({ name: "flow-kernel-test", version: "1.0.0" });
await client.connect(transport);

const report = { tools: (await client.listTools()).tools.map((t) => t.name) };
const outcome = async (call) => {
  try {
    const result = await call();
    return { isError: result.isError ?? false, text: result.content?.[0]?.text, structured: result.structuredContent ?? null };
  } catch (error) {
    return { thrown: String(error?.message ?? error) };
  }
};
report.failed = await outcome(() => client.callTool({ name: "test_error_handling", arguments: {} }));
report.progress = [];
report.progressed = await outcome(() => client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
  onprogress: ({ progress, total, message }) => report.progress.push({ progress, total: total ?? null, message: message ?? null }),
}));
await client.close();
process.stdout.write(JSON.stringify(report) + "\n");
