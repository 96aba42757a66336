// Package crawler lists the tools of the catalog's upstream MCP servers, directly (never
// through the gateway), over Streamable HTTP with a fallback to the legacy SSE transport,
// with internal/mcpclient on the go-sdk client.
//
// Every connection goes through an internal/netguard Guard built for that server: the URL
// is checked before anything is resolved (odd IPv4 spellings such as 2130706433 or
// 0177.0.0.1 are refused outright), and every dial — the first and each redirect's — is
// checked after DNS resolution, on the address actually connected, so loopback, private,
// CGNAT, link-local, ULA, IPv4-mapped forms of those and cloud metadata addresses are
// refused unless the server was added with --allow-private (metadata addresses always).
// Each server's listing is bounded in time (Config.Timeout) and each response body in
// size (Config.MaxResponseBytes); a crawl of many servers runs Config.Concurrency of them
// at once and reports an Outcome per server, in server-name order.
//
// mcpclient reports failures as text; the crawler keeps the netguard error that caused one
// (wrapping netguard.ErrForbiddenAddress, ErrMetadataAddress, ErrInvalidURL,
// ErrResponseTooLarge or ErrTooManyRedirects) by watching the HTTP client it injects, so
// callers can tell a refusal by policy from an unreachable server with errors.Is.
//
// [Lister] is the crawler as the warrant.Lister of a crawl run (warrant.Service.Crawl).
package crawler
