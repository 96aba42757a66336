// Package proxy holds the end-to-end tests of `toolwarrant proxy` (proxy_test.go) and the
// TypeScript SDK client they drive (tsclient.mjs).
package proxy
