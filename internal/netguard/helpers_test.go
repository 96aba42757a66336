package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"
)

// sink is a loopback listener that records the connections it accepts. Every
// connection a test expects to be refused would land here if the check failed.
type sink struct {
	ln     net.Listener
	mu     sync.Mutex
	remote []string        // remote addresses of accepted connections, in order
	probes map[string]bool // local addresses of count's own probe connections
	done   chan struct{}
}

func newSink(t *testing.T) *sink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln, probes: map[string]bool{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.remote = append(s.remote, c.RemoteAddr().String())
			s.mu.Unlock()
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-s.done
	})
	return s
}

func (s *sink) addr() string { return s.ln.Addr().String() }

// count returns how many connections other than its own probes the sink has accepted.
// It connects a probe and waits until the probe is accepted; the listener accepts in
// order, so every connection made before the call has been recorded by then.
func (s *sink) count(t *testing.T) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", s.addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("probe the sink: %v", err)
	}
	probe := c.LocalAddr().String()
	c.Close()
	s.mu.Lock()
	s.probes[probe] = true
	s.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		seen, real := false, 0
		for _, r := range s.remote {
			switch {
			case r == probe:
				seen = true
			case !s.probes[r]:
				real++
			}
		}
		s.mu.Unlock()
		if seen {
			return real
		}
		if time.Now().After(deadline) {
			t.Fatal("the sink never accepted its probe")
		}
		time.Sleep(time.Millisecond)
	}
}

// fakeResolver answers from a table. answers[host][i] is the answer to the i-th lookup of
// host; the last answer repeats. Unknown hosts are "not found".
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver(answers map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
	for host, as := range answers {
		r.answers[host] = [][]netip.Addr{parseAddrs(as...)}
	}
	return r
}

func parseAddrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := r.calls[host]
	r.calls[host]++
	if i >= len(seq) {
		i = len(seq) - 1
	}
	var out []netip.Addr
	for _, a := range seq[i] {
		if (network == "ip4" && !a.Is4()) || (network == "ip6" && a.Is4()) {
			continue
		}
		out = append(out, a)
	}
	return out, nil
}

// dialLog records what Config.Dial was asked to connect to.
type dialLog struct {
	mu    sync.Mutex
	addrs []netip.AddrPort
}

func (l *dialLog) list() []netip.AddrPort {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]netip.AddrPort(nil), l.addrs...)
}

// loopbackDial returns a Config.Dial that records each address and connects to
// route(address) instead, which must be a loopback address: a test can never open a
// connection anywhere else, even when the code under test is wrong.
func loopbackDial(t *testing.T, log *dialLog, route func(netip.AddrPort) string) func(context.Context, string, netip.AddrPort) (net.Conn, error) {
	t.Helper()
	return func(ctx context.Context, _ string, ap netip.AddrPort) (net.Conn, error) {
		log.mu.Lock()
		log.addrs = append(log.addrs, ap)
		log.mu.Unlock()
		target := route(ap)
		tap, err := netip.ParseAddrPort(target)
		if err != nil || !tap.Addr().IsLoopback() {
			t.Errorf("test dial hook routed %s to non-loopback %q", ap, target)
			return nil, errors.New("test dial outside loopback")
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", target)
	}
}

// toSink routes every address to s.
func toSink(s *sink) func(netip.AddrPort) string {
	return func(netip.AddrPort) string { return s.addr() }
}

// loopbackOr routes loopback addresses to themselves and everything else to other.
func loopbackOr(other string) func(netip.AddrPort) string {
	return func(ap netip.AddrPort) string {
		if ap.Addr().Unmap().IsLoopback() {
			return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
		}
		return other
	}
}
