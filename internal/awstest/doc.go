// Package awstest is the integration harness for code that talks to AWS: it decides the
// endpoint, creates tables from template.yaml's own definitions, and offers SDK middlewares
// that count calls per operation and inject faults after a request was sent.
//
// The endpoint is AWS_ENDPOINT_URL when set (LocalStack, a real account). Otherwise the
// harness starts moto_server on a free loopback port, once per test binary, behind a
// loopback proxy that serializes requests (see moto.go for why), and stops it by PID when
// Main returns. With neither, tests skip with a one-line reason — or fail when
// AGENTGATE_REQUIRE_AWS=1, as .ci/run sets.
//
// A package using Config must call Main from its TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(awstest.Main(m)) }
package awstest
