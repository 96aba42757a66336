// Package payments holds the integration tests of Padlock's pay-per-pad mode
// (LOCKER_MODE=txid) against a real local EVM node: ganache (pinned in test/package.json) is
// started on a free loopback port, the ERC-20 in test/fixtures/erc20 is compiled with the
// pinned solc and deployed as the stand-in for USDC, and real transfer transactions are
// handed to the real lockerd handler over SQLite as X-Payment-Proof.
//
// The tests skip when node or the npm packages are missing (run `npm ci --prefix test`),
// and fail instead when AGENTGATE_REQUIRE_EXTERNAL=1, as in CI. The package has no
// non-test code.
package payments
