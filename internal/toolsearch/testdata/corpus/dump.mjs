// dump.mjs starts each MCP server of the corpus over stdio, with dummy
// credentials and no network, and writes what it answered — initialize's
// serverInfo and instructions, every page of tools/list — to corpus.json.
// The tools are written exactly as the server sent them (the raw JSON-RPC
// result, not the SDK's parsed copy). See README.md for the command.
//
// Run it with the packages of package.json installed in the current folder:
//   node /path/to/dump.mjs [OUT]
// NERVE_BIN names the nerve binary whose bash node is the last "server";
// ONLY=id,id dumps only those servers (to try one; the output then holds
// only them).

import { createRequire } from "node:module";
import { execFileSync, spawn } from "node:child_process";
import net from "node:net";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(process.argv[2] ?? path.join(here, "..", "corpus.json"));
const scratch = process.cwd();
const require = createRequire(path.join(scratch, "package.json"));
const sdk = (p) => import(pathToFileURL(require.resolve(`@modelcontextprotocol/sdk/${p}`)).href);
const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");

// A fresh folder for the servers' files (HOME, allowed roots, memory files)
// so nothing they write lands in the user's home or the repository.
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "corpus-"));
const home = path.join(tmp, "home");
const data = path.join(tmp, "data");
fs.mkdirSync(home);
fs.mkdirSync(data);

// dummyFile writes a file of dummy credentials for a server that reads them
// at start.
function dummyFile(name, content) {
  const file = path.join(data, name);
  fs.writeFileSync(file, JSON.stringify(content));
  return file;
}

// The servers, in the order of corpus.json. id is the node name a user would
// give it; env holds dummy credentials (never used: nothing is called).
const nerve = process.env.NERVE_BIN ?? "nerve";
const servers = [
  { id: "everything", pkg: "@modelcontextprotocol/server-everything", args: ["stdio"] },
  { id: "fs", pkg: "@modelcontextprotocol/server-filesystem", args: [data] },
  { id: "memory", pkg: "@modelcontextprotocol/server-memory", env: { MEMORY_FILE_PATH: path.join(data, "memory.jsonl") } },
  { id: "thinking", pkg: "@modelcontextprotocol/server-sequential-thinking" },
  { id: "github", pkg: "@modelcontextprotocol/server-github", env: { GITHUB_PERSONAL_ACCESS_TOKEN: "ghp_dummy" } },
  { id: "gitlab", pkg: "@modelcontextprotocol/server-gitlab", env: { GITLAB_PERSONAL_ACCESS_TOKEN: "glpat-dummy", GITLAB_API_URL: "http://127.0.0.1:9/api/v4" } },
  { id: "slack", pkg: "@modelcontextprotocol/server-slack", env: { SLACK_BOT_TOKEN: "xoxb-dummy", SLACK_TEAM_ID: "T00000000" } },
  { id: "maps", pkg: "@modelcontextprotocol/server-google-maps", env: { GOOGLE_MAPS_API_KEY: "dummy" } },
  { id: "brave", pkg: "@modelcontextprotocol/server-brave-search", env: { BRAVE_API_KEY: "dummy" } },
  { id: "postgres", pkg: "@modelcontextprotocol/server-postgres", args: ["postgresql://127.0.0.1:9/dummy"] },
  { id: "puppeteer", pkg: "@modelcontextprotocol/server-puppeteer", env: { PUPPETEER_SKIP_DOWNLOAD: "1" } },
  { id: "redis", pkg: "@modelcontextprotocol/server-redis", start: redis },
  { id: "gdrive", pkg: "@modelcontextprotocol/server-gdrive", env: { GDRIVE_CREDENTIALS_PATH: dummyFile("gdrive.json", { access_token: "dummy", token_type: "Bearer" }) } },
  { id: "awskb", pkg: "@modelcontextprotocol/server-aws-kb-retrieval", env: { AWS_ACCESS_KEY_ID: "dummy", AWS_SECRET_ACCESS_KEY: "dummy", AWS_REGION: "us-east-1" } },
  { id: "everart", pkg: "@modelcontextprotocol/server-everart", env: { EVERART_API_KEY: "dummy" } },
  { id: "notion", pkg: "@notionhq/notion-mcp-server", env: { NOTION_TOKEN: "ntn_dummy" } },
  { id: "chart", pkg: "@antv/mcp-server-chart" },
  { id: "playwright", pkg: "@playwright/mcp", args: ["--headless"] },
  { id: "k8s", pkg: "mcp-server-kubernetes" },
  { id: "context7", pkg: "@upstash/context7-mcp" },
  { id: "firecrawl", pkg: "firecrawl-mcp", env: { FIRECRAWL_API_KEY: "fc-dummy" } },
  { id: "tavily", pkg: "tavily-mcp", env: { TAVILY_API_KEY: "tvly-dummy" } },
  { id: "supabase", pkg: "@supabase/mcp-server-supabase", args: ["--features=account,database,debugging,development,functions,storage,branching"], env: { SUPABASE_ACCESS_TOKEN: "sbp_dummy" } },
  { id: "exa", pkg: "exa-mcp-server", env: { EXA_API_KEY: "dummy" } },
  { id: "bash", pkg: "nerve", command: nerve, args: ["mcp", "serve", "--node", "bash"], env: { NERVE_HOME: path.join(tmp, "nerve") } },
];

// redis starts a throwaway redis-server (Debian's redis-server package) for
// the redis MCP server, which connects before it answers initialize.
async function redis() {
  const port = await new Promise((ok) => {
    const l = net.createServer().listen(0, "127.0.0.1", () => {
      const p = l.address().port;
      l.close(() => ok(p));
    });
  });
  const r = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", data], { stdio: "ignore" });
  await new Promise((ok, no) => {
    r.on("error", no);
    const poll = () => {
      const c = net.connect(port, "127.0.0.1", () => (c.destroy(), ok()));
      c.on("error", () => setTimeout(poll, 100));
    };
    poll();
  });
  return { args: [`redis://127.0.0.1:${port}`], stop: () => r.kill() };
}

// bin is the path of a package's (first) executable.
function bin(pkg) {
  const file = path.join(scratch, "node_modules", pkg, "package.json");
  const meta = JSON.parse(fs.readFileSync(file, "utf8"));
  const b = typeof meta.bin === "string" ? meta.bin : Object.values(meta.bin)[0];
  return { path: path.join(path.dirname(file), b), version: meta.version };
}

// dump starts one server and returns its entry of corpus.json.
async function dump(s) {
  const started = s.start ? await s.start() : { args: [] };
  try {
    return await run(s, started.args);
  } finally {
    started.stop?.();
  }
}

async function run(s, extra) {
  let command, args, version;
  if (s.command) {
    command = s.command;
    args = s.args ?? [];
    // nerve built from a checkout says "devel": name the commit instead.
    try {
      version = execFileSync("git", ["-C", here, "rev-parse", "--short=12", "HEAD"], { encoding: "utf8" }).trim();
    } catch {}
  } else {
    const b = bin(s.pkg);
    command = process.execPath;
    args = [b.path, ...(s.args ?? []), ...extra];
    version = b.version;
  }
  const stdio = new StdioClientTransport({
    command,
    args,
    cwd: data,
    stderr: "pipe",
    env: { PATH: process.env.PATH, HOME: home, NO_COLOR: "1", ...(s.env ?? {}) },
  });
  let stderr = "";
  stdio.stderr?.on("data", (d) => (stderr += d));
  // The client talks through this transport, which keeps every raw result:
  // the answers as the server sent them, before the SDK parses them.
  const raw = new Map();
  let changed;
  const listChanged = new Promise((ok) => (changed = ok));
  const transport = {
    start: () => stdio.start(),
    send: (m, o) => stdio.send(m, o),
    close: () => stdio.close(),
  };
  stdio.onmessage = (m) => {
    if (m.id !== undefined && "result" in m) raw.set(m.id, m.result);
    if (m.method === "notifications/tools/list_changed") changed();
    transport.onmessage?.(m);
  };
  stdio.onerror = (e) => transport.onerror?.(e);
  stdio.onclose = () => transport.onclose?.();
  const client = new Client({ name: "nerve-corpus", version: "1" });
  const deadline = (p, what) =>
    Promise.race([p, new Promise((_, no) => setTimeout(() => no(new Error(`${what}: no answer in 30s`)), 30000).unref())]);
  try {
    await deadline(client.connect(transport), "initialize");
    const init = [...raw.values()][0];
    let tools = await list(client, raw, deadline);
    if (tools.length === 0 && init.capabilities?.tools?.listChanged) {
      // A server whose tools come later (nerve's node is still starting)
      // says so with list_changed.
      await deadline(listChanged, "tools/list_changed");
      tools = await list(client, raw, deadline);
    }
    return {
      name: s.id,
      package: s.pkg,
      version: version ?? init.serverInfo?.version,
      serverInfo: init.serverInfo,
      instructions: init.instructions ?? "",
      tools,
    };
  } catch (e) {
    throw new Error(`${e.message}\n--- stderr ---\n${stderr.slice(-2000)}`);
  } finally {
    await client.close().catch(() => {});
  }
}

// list returns every page of tools/list, as the server sent them.
async function list(client, raw, deadline) {
  const tools = [];
  let cursor;
  do {
    const before = new Set(raw.keys());
    await deadline(client.listTools(cursor ? { cursor } : {}), "tools/list");
    const id = [...raw.keys()].find((k) => !before.has(k));
    const page = raw.get(id);
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

const result = { servers: [] };
const seen = new Map(); // a tool's JSON → the server that listed it first
const failed = [];
for (const s of servers.filter((s) => !process.env.ONLY || process.env.ONLY.split(",").includes(s.id))) {
  try {
    const entry = await dump(s);
    const kept = [];
    for (const t of entry.tools) {
      const key = JSON.stringify(t);
      if (seen.has(key)) {
        console.error(`${s.id}.${t.name}: dropped, the same tool as ${seen.get(key)}.${t.name}`);
        continue;
      }
      seen.set(key, s.id);
      kept.push(t);
    }
    entry.tools = kept;
    result.servers.push(entry);
    console.error(`${s.id}: ${entry.tools.length} tools (${entry.package}@${entry.version})`);
  } catch (e) {
    failed.push(s.id);
    console.error(`${s.id}: FAILED: ${e.message}`);
  }
}
if (servers.some((s) => s.id === "bash")) {
  // nerve mcp serve started a daemon in its own NERVE_HOME: stop it.
  try {
    execFileSync(nerve, ["daemon", "stop"], { env: { ...process.env, NERVE_HOME: path.join(tmp, "nerve") }, stdio: "ignore" });
  } catch {}
}
fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 5 });
fs.writeFileSync(out, JSON.stringify(result, null, 1) + "\n");
const total = result.servers.reduce((n, s) => n + s.tools.length, 0);
console.error(`${out}: ${result.servers.length} servers, ${total} tools${failed.length ? `; failed: ${failed.join(", ")}` : ""}`);
process.exitCode = failed.length ? 1 : 0;
