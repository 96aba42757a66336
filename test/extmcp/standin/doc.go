// Package standin is a stand-in for agentgateway in toolwarrant's tests: a small MCP proxy
// that reads the configuration 'toolwarrant emit' wrote and calls the ExtMcp processor
// exactly as the gateway does (docs/extmcp.md). agentgateway itself cannot be installed
// on the machines these tests run on.
package standin
