// Package toolwarrant holds toolwarrant's cross-package and end-to-end tests: the built
// binary against real MCP servers no one here wrote (server-everything over Streamable
// HTTP) and the rug-pull fixture (test/fixtures/rugpull), and the crawl benchmarks.
package toolwarrant
