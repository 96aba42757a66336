// A real MCP client for the proxy tests: the TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in test/package.json) over Streamable HTTP, driven line by line from stdin so the
// Go test can change the upstream between steps. Each command prints one JSON line:
//
//   list                      {"op":"list","tools":["add",...]}
//   call NAME [JSON-ARGS]     {"op":"call","ok":true,"text":"..."} or {"op":"call","ok":false,"error":"..."}
//   wait-list-changed MS      {"op":"list-changed","seen":true|false}
//   close                     {"op":"closed"} and exit 0
//
// Usage: node tsclient.mjs http://127.0.0.1:PORT/SERVER/mcp
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import readline from 'node:readline';

const url = process.argv[2];
if (!url) {
  console.error('usage: node tsclient.mjs URL');
  process.exit(2);
}
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const client = new Client({ name: 'agentgate-proxy-test', version: '1.0.0' }, { capabilities: {} });
let changed = 0;
let waiter = null;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changed++;
  if (waiter) waiter();
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

const rl = readline.createInterface({ input: process.stdin });
for await (const line of rl) {
  const [op, ...rest] = line.trim().split(' ');
  try {
    if (op === 'list') {
      const res = await client.listTools();
      out({ op: 'list', tools: res.tools.map((t) => t.name) });
    } else if (op === 'call') {
      const name = rest[0];
      const args = rest.length > 1 ? JSON.parse(rest.slice(1).join(' ')) : {};
      try {
        const res = await client.callTool({ name, arguments: args });
        const text = (res.content || []).map((c) => c.text || '').join('');
        out({ op: 'call', ok: !res.isError, text });
      } catch (e) {
        out({ op: 'call', ok: false, error: String(e && e.message ? e.message : e) });
      }
    } else if (op === 'wait-list-changed') {
      const ms = Number(rest[0] || 5000);
      if (changed > 0) {
        changed = 0;
        out({ op: 'list-changed', seen: true });
        continue;
      }
      const seen = await new Promise((resolve) => {
        const t = setTimeout(() => { waiter = null; resolve(false); }, ms);
        waiter = () => { clearTimeout(t); waiter = null; resolve(true); };
      });
      changed = 0;
      out({ op: 'list-changed', seen });
    } else if (op === 'close') {
      await client.close();
      out({ op: 'closed' });
      process.exit(0);
    } else {
      out({ op: 'error', error: 'unknown command ' + op });
    }
  } catch (e) {
    out({ op: 'error', error: String(e && e.message ? e.message : e) });
  }
}
await client.close();
