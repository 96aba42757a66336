// Package gatewayconf writes and reads agentgateway's standalone configuration for
// toolwarrant: [Emit] produces, deterministically, one route per upstream server whose
// mcpGuardrails processor is `toolwarrant serve` with failureMode failClosed, methods
// {tools/list: response, tools/call: request} and a request timeout, plus an explicit
// mcpAuthorization allow rule per approved tool; [Parse] reads the MCP routes of any
// standalone configuration back; [Verify] compares a live gateway listing, the catalog's
// approved set and a configuration, and reports every mismatch (verify-gateway).
package gatewayconf
