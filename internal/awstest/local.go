package awstest

import (
	"os"
	"sync"
	"testing"
)

// Local is a local stand-in for an AWS service that a test binary starts on first use
// (Endpoint) and stops after its tests (Run, from its package's Main). With
// AWS_ENDPOINT_URL set, that endpoint is used and nothing is started.
type Local struct {
	// Pkg names the harness package in messages ("awstest"); What names the service ("the
	// moto_server").
	Pkg, What string
	// Start starts the service and returns its URL and how to stop it.
	Start func() (url string, stop func(), err error)
	// Failed reports a start that failed, to every test that asks; it must end the test
	// (skip or fail it).
	Failed func(t testing.TB, err error)

	mu     sync.Mutex
	inMain bool
	tried  bool
	url    string
	stop   func()
	err    error
}

// Run runs the tests through run and then stops the service if it was started.
func (l *Local) Run(m *testing.M, run func(*testing.M) int) int {
	l.mu.Lock()
	l.inMain = true
	l.mu.Unlock()
	code := run(m)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stop != nil {
		l.stop()
		l.stop = nil
	}
	return code
}

// Endpoint returns AWS_ENDPOINT_URL when set, else the URL of the service, started on the
// first call.
func (l *Local) Endpoint(t testing.TB) string {
	t.Helper()
	if u := os.Getenv("AWS_ENDPOINT_URL"); u != "" {
		return u
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.inMain {
		t.Fatalf("%s: call %s.Main from TestMain so %s it starts is stopped", l.Pkg, l.Pkg, l.What)
	}
	if !l.tried {
		l.tried = true
		l.url, l.stop, l.err = l.Start()
	}
	if l.err != nil {
		l.Failed(t, l.err)
	}
	return l.url
}

// CurrentRegion is AWS_REGION, else Region.
func CurrentRegion() string {
	if r := os.Getenv("AWS_REGION"); r != "" {
		return r
	}
	return Region
}
