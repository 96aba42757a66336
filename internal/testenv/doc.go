// Package testenv decides, for tests, whether an external dependency (an AWS endpoint, node,
// an npm package, a binary) is available, and what to do when it is not.
//
// The rule is the same everywhere: when a dependency is missing the test skips with a
// one-line reason, unless the environment asks for it to be required — then the test fails.
// .ci/run sets AGENTGATE_REQUIRE_AWS=1 (AWS emulators) and AGENTGATE_REQUIRE_EXTERNAL=1
// (node, npm packages, other tools), so no skip can hide in CI.
package testenv
