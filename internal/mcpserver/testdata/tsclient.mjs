// A client built with the TypeScript MCP SDK (a real peer nerve did not
// write), for internal/mcpserver's tests:
//
//   node tsclient.mjs SDK_DIR stdio|http TARGET TOOL ARGS_JSON
//
// SDK_DIR is @modelcontextprotocol/sdk's folder; TARGET is the command
// line of `nerve mcp serve` (JSON array) or the endpoint's URL (token in
// NERVE_TOKEN). It lists the tools, calls TOOL with ARGS_JSON — answering
// an elicitation with {"answer": "from TypeScript"} — and prints
// {"protocol", "tools", "text"} as JSON.
const [sdk, mode, target, tool, args] = process.argv.slice(2);
const { Client } = await import(`${sdk}/dist/esm/client/index.js`);
const { ElicitRequestSchema } = await import(`${sdk}/dist/esm/types.js`);

const client = new Client({ name: "ts-client", version: "1" }, { capabilities: { elicitation: {} } });
client.setRequestHandler(ElicitRequestSchema, async () => ({ action: "accept", content: { answer: "from TypeScript" } }));
let transport;
if (mode === "stdio") {
  const { StdioClientTransport } = await import(`${sdk}/dist/esm/client/stdio.js`);
  const argv = JSON.parse(target);
  transport = new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: process.env });
} else {
  const { StreamableHTTPClientTransport } = await import(`${sdk}/dist/esm/client/streamableHttp.js`);
  transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.NERVE_TOKEN}` } },
  });
}
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
const res = await client.callTool({ name: tool, arguments: JSON.parse(args) });
const text = res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
console.log(JSON.stringify({ protocol: transport.protocolVersion ?? null, tools, text }));
await client.close();
