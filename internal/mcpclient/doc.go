// Package mcpclient reads the MCP client configurations people already have and lists the
// tools of the servers they name, keeping every tool object exactly as the server sent it.
//
// Two configuration shapes are understood: the "mcpServers" object used by Claude Desktop,
// Claude Code (.mcp.json) and Cursor (mcp.json, .cursor/mcp.json), and the "servers" object
// of VS Code (.vscode/mcp.json, or "mcp.servers" in a settings file). See [LoadConfig] for
// the variable references that are resolved and the ones that are refused.
//
// [ListTools] connects to one server — a stdio child process, or a remote URL over
// Streamable HTTP with a fallback to the older HTTP+SSE transport — performs the MCP
// handshake with github.com/modelcontextprotocol/go-sdk, follows nextCursor pagination and
// returns the raw JSON of every tool. It bounds the whole exchange with a timeout and, for
// stdio servers, stops the child and everything it started before returning.
//
// The package does no SSRF filtering of its own: callers that list untrusted URLs inject a
// guarded *http.Client through [Options].
package mcpclient
