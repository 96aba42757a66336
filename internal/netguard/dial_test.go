package netguard

import (
	"errors"
	"net"
	"net/netip"
	"testing"
)

// forbidden is the SSRF matrix: one address per refused class and embedded form.
var forbidden = []struct {
	addr  string
	class Class
}{
	{"127.0.0.1", ClassLoopback},
	{"127.1.2.3", ClassLoopback},
	{"::1", ClassLoopback},
	{"10.0.0.1", ClassPrivate},
	{"172.16.5.4", ClassPrivate},
	{"192.168.0.1", ClassPrivate},
	{"100.64.0.1", ClassSharedAddress},
	{"169.254.10.10", ClassLinkLocal},
	{"fe80::1", ClassLinkLocal},
	{"fd00::1", ClassUniqueLocal},
	{"fec0::1", ClassSiteLocal},
	{"0.0.0.0", ClassUnspecified},
	{"::", ClassUnspecified},
	{"224.0.0.251", ClassMulticast},
	{"ff02::1", ClassMulticast},
	{"255.255.255.255", ClassBroadcast},
	{"240.0.0.1", ClassReserved},
	{"192.0.2.1", ClassDocumentation},
	{"198.18.0.1", ClassBenchmark},
	{"169.254.169.254", ClassMetadata},
	{"169.254.170.2", ClassMetadata},
	{"fd00:ec2::254", ClassMetadata},
	{"::ffff:127.0.0.1", ClassLoopback},
	{"::ffff:169.254.169.254", ClassMetadata},
	{"::ffff:10.0.0.1", ClassPrivate},
	{"64:ff9b::7f00:1", ClassLoopback},
	{"::7f00:1", ClassLoopback},
	{"2002:a9fe:a9fe::", ClassMetadata},
}

func TestDialRefusesBeforeConnecting(t *testing.T) {
	for _, tc := range forbidden {
		t.Run(tc.addr, func(t *testing.T) {
			s := newSink(t)
			log := &dialLog{}
			g := New(Config{
				Resolver: newResolver(map[string][]string{"victim.test": {tc.addr}}),
				Dial:     loopbackDial(t, log, toSink(s)),
			})
			for _, target := range []string{"victim.test:80", net.JoinHostPort(tc.addr, "80")} {
				c, err := g.DialContext(t.Context(), "tcp", target)
				if err == nil {
					c.Close()
					t.Fatalf("DialContext(%s) succeeded", target)
				}
				var ae *AddressError
				if !errors.Is(err, ErrForbiddenAddress) || !errors.As(err, &ae) {
					t.Fatalf("DialContext(%s) = %v, want an *AddressError", target, err)
				}
				if ae.Class != tc.class {
					t.Errorf("DialContext(%s) refused as %v, want %v", target, ae.Class, tc.class)
				}
			}
			if got := log.list(); len(got) != 0 {
				t.Errorf("Dial was asked to connect to %v", got)
			}
			if n := s.count(t); n != 0 {
				t.Errorf("sink accepted %d connections, want 0", n)
			}
		})
	}
}

// TestAllowPrivateMatrix: the same addresses under AllowPrivate. Private classes connect
// (to the sink, through the hook); metadata and the never-allowed classes still do not.
func TestAllowPrivateMatrix(t *testing.T) {
	for _, tc := range forbidden {
		t.Run(tc.addr, func(t *testing.T) {
			s := newSink(t)
			log := &dialLog{}
			g := New(Config{
				AllowPrivate: true,
				Resolver:     newResolver(map[string][]string{"intranet.test": {tc.addr}}),
				Dial:         loopbackDial(t, log, toSink(s)),
			})
			c, err := g.DialContext(t.Context(), "tcp", "intranet.test:80")
			if tc.class.Private() {
				if err != nil {
					t.Fatalf("DialContext = %v, want a connection", err)
				}
				c.Close()
				if n := s.count(t); n != 1 {
					t.Errorf("sink accepted %d connections, want 1", n)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("DialContext succeeded")
			}
			if !errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("DialContext = %v, want ErrForbiddenAddress", err)
			}
			if got := errors.Is(err, ErrMetadataAddress); got != (tc.class == ClassMetadata) {
				t.Errorf("errors.Is(ErrMetadataAddress) = %v for %v", got, tc.class)
			}
			if n := s.count(t); n != 0 {
				t.Errorf("sink accepted %d connections, want 0", n)
			}
		})
	}
}

// TestRealLoopbackDial uses the production connect step (net.Dialer with the
// ControlContext belt) against a loopback listener.
func TestRealLoopbackDial(t *testing.T) {
	s := newSink(t)
	_, port, _ := net.SplitHostPort(s.addr())
	res := newResolver(map[string][]string{"svc.test": {"127.0.0.1"}})

	c, err := New(Config{Resolver: res}).DialContext(t.Context(), "tcp", net.JoinHostPort("svc.test", port))
	if err == nil {
		c.Close()
		t.Fatal("default policy connected to loopback")
	}
	if n := s.count(t); n != 0 {
		t.Fatalf("sink accepted %d connections after a refusal", n)
	}

	c, err = New(Config{Resolver: res, AllowPrivate: true}).DialContext(t.Context(), "tcp", net.JoinHostPort("svc.test", port))
	if err != nil {
		t.Fatalf("AllowPrivate dial: %v", err)
	}
	c.Close()
	if n := s.count(t); n != 1 {
		t.Fatalf("sink accepted %d connections, want 1", n)
	}
}

// TestControlContextBelt dials with a plain net.Dialer whose only protection is the
// Guard's ControlContext: the socket must not connect.
func TestControlContextBelt(t *testing.T) {
	s := newSink(t)
	g := New(Config{})
	d := net.Dialer{ControlContext: g.ControlContext}
	c, err := d.DialContext(t.Context(), "tcp", s.addr())
	if err == nil {
		c.Close()
		t.Fatal("ControlContext let a loopback connection through")
	}
	if !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("dial error %v does not wrap ErrForbiddenAddress", err)
	}
	if n := s.count(t); n != 0 {
		t.Errorf("sink accepted %d connections, want 0", n)
	}
	if err := g.ControlContext(t.Context(), "tcp4", "8.8.8.8:443", nil); err != nil {
		t.Errorf("ControlContext refused a public address: %v", err)
	}
	if err := g.ControlContext(t.Context(), "tcp4", "garbage", nil); err == nil {
		t.Error("ControlContext accepted an unparsable address")
	}
}

// TestRebinding: the resolver answers a documentation address the operator allows
// first, loopback the second time. The second connection must be refused, because the
// check runs on what is connected, every time.
func TestRebinding(t *testing.T) {
	s := newSink(t)
	log := &dialLog{}
	res := &fakeResolver{
		answers: map[string][][]netip.Addr{"rebind.test": {parseAddrs("192.0.2.10"), parseAddrs("127.0.0.1")}},
		calls:   map[string]int{},
	}
	g := New(Config{
		Allow:    []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Resolver: res,
		Dial:     loopbackDial(t, log, toSink(s)),
	})
	c, err := g.DialContext(t.Context(), "tcp", "rebind.test:80")
	if err != nil {
		t.Fatalf("first dial: %v", err)
	}
	c.Close()
	_, err = g.DialContext(t.Context(), "tcp", "rebind.test:80")
	var ae *AddressError
	if !errors.As(err, &ae) || ae.Class != ClassLoopback || ae.Host != "rebind.test" {
		t.Fatalf("second dial = %v, want a loopback refusal for rebind.test", err)
	}
	if got, want := log.list(), []netip.AddrPort{netip.MustParseAddrPort("192.0.2.10:80")}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("connected to %v, want %v", got, want)
	}
	if n := s.count(t); n != 1 {
		t.Errorf("sink accepted %d connections, want 1", n)
	}
}

// TestMixedAnswers: one private answer among public ones refuses the host.
func TestMixedAnswers(t *testing.T) {
	s := newSink(t)
	log := &dialLog{}
	g := New(Config{
		Allow:    []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Resolver: newResolver(map[string][]string{"mixed.test": {"192.0.2.1", "10.0.0.1", "192.0.2.2"}}),
		Dial:     loopbackDial(t, log, toSink(s)),
	})
	if _, err := g.DialContext(t.Context(), "tcp", "mixed.test:443"); !errors.Is(err, ErrForbiddenAddress) {
		t.Fatalf("DialContext = %v, want ErrForbiddenAddress", err)
	}
	if n := s.count(t); n != 0 || len(log.list()) != 0 {
		t.Errorf("connections made: sink %d, dial %v", n, log.list())
	}
}

func TestDialInputErrors(t *testing.T) {
	s := newSink(t)
	log := &dialLog{}
	g := New(Config{
		AllowPrivate: true,
		Resolver:     newResolver(map[string][]string{"empty.test": {}}),
		Dial:         loopbackDial(t, log, toSink(s)),
	})
	tests := []struct {
		name, network, addr string
		forbidden           bool
	}{
		{"udp", "udp", "127.0.0.1:53", false},
		{"no port", "tcp", "127.0.0.1", false},
		{"named port", "tcp", "127.0.0.1:http", false},
		{"unknown host", "tcp", "nowhere.test:80", false},
		{"no addresses", "tcp", "empty.test:80", false},
		{"decimal IPv4 host", "tcp", "2130706433:80", false},
		{"octal IPv4 host", "tcp", "0177.0.0.1:80", false},
		{"hex metadata host", "tcp", "0xa9fea9fe:80", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := g.DialContext(t.Context(), tc.network, tc.addr)
			if err == nil {
				c.Close()
				t.Fatalf("DialContext(%s, %s) succeeded", tc.network, tc.addr)
			}
			if got := errors.Is(err, ErrForbiddenAddress); got != tc.forbidden {
				t.Errorf("DialContext(%s) = %v, want forbidden=%v", tc.addr, err, tc.forbidden)
			}
		})
	}
	if n := s.count(t); n != 0 || len(log.list()) != 0 {
		t.Errorf("connections made: sink %d, dial %v", n, log.list())
	}
	// Under the default policy localhost is refused without asking the resolver.
	if _, err := New(Config{Resolver: newResolver(nil)}).DialContext(t.Context(), "tcp", "api.localhost:80"); !errors.Is(err, ErrForbiddenAddress) {
		t.Errorf("api.localhost: %v, want ErrForbiddenAddress", err)
	}
}
