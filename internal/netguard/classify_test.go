package netguard

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		addr string
		want Class
	}{
		{"1.1.1.1", ClassPublic},
		{"8.8.8.8", ClassPublic},
		{"172.32.0.1", ClassPublic},
		{"198.20.0.1", ClassPublic},
		{"2606:4700::1111", ClassPublic},
		{"127.0.0.1", ClassLoopback},
		{"127.255.255.254", ClassLoopback},
		{"::1", ClassLoopback},
		{"10.0.0.1", ClassPrivate},
		{"172.16.0.1", ClassPrivate},
		{"172.31.255.255", ClassPrivate},
		{"192.168.1.1", ClassPrivate},
		{"100.64.0.1", ClassSharedAddress},
		{"100.127.255.255", ClassSharedAddress},
		{"169.254.1.1", ClassLinkLocal},
		{"fe80::1", ClassLinkLocal},
		{"fe80::1%eth0", ClassLinkLocal},
		{"fc00::1", ClassUniqueLocal},
		{"fd12:3456::1", ClassUniqueLocal},
		{"fec0::1", ClassSiteLocal},
		{"0.0.0.0", ClassUnspecified},
		{"0.1.2.3", ClassUnspecified},
		{"::", ClassUnspecified},
		{"224.0.0.1", ClassMulticast},
		{"239.255.255.250", ClassMulticast},
		{"ff02::1", ClassMulticast},
		{"255.255.255.255", ClassBroadcast},
		{"240.0.0.1", ClassReserved},
		{"4000::1", ClassReserved},
		{"192.0.2.1", ClassDocumentation},
		{"198.51.100.1", ClassDocumentation},
		{"203.0.113.1", ClassDocumentation},
		{"2001:db8::1", ClassDocumentation},
		{"3fff::1", ClassDocumentation},
		{"198.18.0.1", ClassBenchmark},
		{"198.19.255.255", ClassBenchmark},
		{"2001:2::1", ClassBenchmark},
		{"192.0.0.8", ClassSpecialPurpose},
		{"192.88.99.1", ClassSpecialPurpose},
		{"100::1", ClassSpecialPurpose},
		{"64:ff9b:1::1", ClassSpecialPurpose},
		{"2001:10::1", ClassSpecialPurpose},
		// Metadata endpoints win over the ranges they sit in.
		{"169.254.169.254", ClassMetadata},
		{"169.254.170.2", ClassMetadata},
		{"169.254.170.23", ClassMetadata},
		{"100.100.100.200", ClassMetadata},
		{"168.63.129.16", ClassMetadata},
		{"fd00:ec2::254", ClassMetadata},
		{"fd00:ec2::23", ClassMetadata},
		// Embedded IPv4 takes the IPv4 address's class.
		{"::ffff:127.0.0.1", ClassLoopback},
		{"::ffff:7f00:1", ClassLoopback},
		{"::ffff:10.1.2.3", ClassPrivate},
		{"::ffff:169.254.169.254", ClassMetadata},
		{"::ffff:8.8.8.8", ClassPublic},
		{"::ffff:0:127.0.0.1", ClassLoopback},
		{"64:ff9b::127.0.0.1", ClassLoopback},
		{"64:ff9b::a9fe:a9fe", ClassMetadata},
		{"64:ff9b::192.168.0.1", ClassPrivate},
		{"64:ff9b::8.8.8.8", ClassPublic},
		{"::127.0.0.1", ClassLoopback},
		{"::169.254.169.254", ClassMetadata},
		{"::8.8.8.8", ClassReserved},
		{"2002:7f00:1::1", ClassLoopback},
		{"2002:a9fe:a9fe::1", ClassMetadata},
		{"2002:c0a8:101::1", ClassPrivate},
		{"2002:808:808::1", ClassPublic},
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", ClassLoopback},      // Teredo client 127.0.0.1
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", ClassDocumentation}, // Teredo client 192.0.2.45
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", ClassPrivate},           // Teredo server 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", ClassPublic},        // Teredo client 8.8.8.8
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			if got := Classify(netip.MustParseAddr(tc.addr)); got != tc.want {
				t.Errorf("Classify(%s) = %v, want %v", tc.addr, got, tc.want)
			}
		})
	}
	if got := Classify(netip.Addr{}); got != ClassReserved {
		t.Errorf("Classify(invalid) = %v, want reserved", got)
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		addr                      string
		refused, refusedAllowPriv bool
		metadata                  bool
	}{
		{"8.8.8.8", false, false, false},
		{"127.0.0.1", true, false, false},
		{"10.0.0.1", true, false, false},
		{"100.64.0.1", true, false, false},
		{"169.254.1.1", true, false, false},
		{"fd12::1", true, false, false},
		{"::ffff:192.168.0.1", true, false, false},
		{"192.0.2.1", true, false, false},
		{"0.0.0.0", true, true, false},
		{"::", true, true, false},
		{"224.0.0.1", true, true, false},
		{"255.255.255.255", true, true, false},
		{"240.0.0.1", true, true, false},
		{"169.254.169.254", true, true, true},
		{"169.254.170.2", true, true, true},
		{"fd00:ec2::254", true, true, true},
		{"::ffff:169.254.169.254", true, true, true},
	}
	strict := New(Config{})
	lax := New(Config{AllowPrivate: true})
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			a := netip.MustParseAddr(tc.addr)
			for _, g := range []struct {
				name    string
				g       *Guard
				refused bool
			}{{"default", strict, tc.refused}, {"AllowPrivate", lax, tc.refusedAllowPriv}} {
				err := g.g.CheckAddr(a)
				if got := err != nil; got != g.refused {
					t.Fatalf("%s: CheckAddr(%s) = %v, want refused=%v", g.name, a, err, g.refused)
				}
				if err == nil {
					continue
				}
				if !errors.Is(err, ErrForbiddenAddress) {
					t.Errorf("%s: %v does not wrap ErrForbiddenAddress", g.name, err)
				}
				if got := errors.Is(err, ErrMetadataAddress); got != tc.metadata {
					t.Errorf("%s: errors.Is(%v, ErrMetadataAddress) = %v, want %v", g.name, err, got, tc.metadata)
				}
			}
		})
	}
}

func TestAllowPrefixes(t *testing.T) {
	g := New(Config{Allow: []netip.Prefix{
		netip.MustParsePrefix("10.20.0.0/16"),
		netip.MustParsePrefix("169.254.0.0/16"),
		netip.MustParsePrefix("0.0.0.0/0"),
	}})
	tests := []struct {
		addr    string
		allowed bool
	}{
		{"10.20.1.2", true},
		{"::ffff:10.20.1.2", true},
		{"10.21.0.1", true}, // 0.0.0.0/0 covers every private IPv4 address ...
		{"169.254.169.254", false},
		{"0.0.0.0", false}, // ... but never the classes AllowPrivate cannot lift
		{"224.0.0.1", false},
		{"fd12::1", false}, // no IPv6 prefix allowed
	}
	for _, tc := range tests {
		if err := g.CheckAddr(netip.MustParseAddr(tc.addr)); (err == nil) != tc.allowed {
			t.Errorf("CheckAddr(%s) = %v, want allowed=%v", tc.addr, err, tc.allowed)
		}
	}
}

func TestAddressErrorMessage(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"metadata", &AddressError{Host: "metadata.test", Addr: netip.MustParseAddr("169.254.169.254"), Class: ClassMetadata},
			[]string{"169.254.169.254", `"metadata.test"`, "cloud metadata", "even with AllowPrivate"}},
		{"embedded", New(Config{}).CheckAddr(netip.MustParseAddr("::ffff:10.0.0.1")),
			[]string{"::ffff:10.0.0.1", "IPv4-mapped 10.0.0.1", "private (RFC 1918)", "only with AllowPrivate"}},
		{"never", New(Config{AllowPrivate: true}).CheckAddr(netip.MustParseAddr("224.0.0.1")),
			[]string{"224.0.0.1", "multicast address"}},
		{"spelled", New(Config{}).checkHostName("0x7f.1"),
			[]string{"127.0.0.1", `(spelled "0x7f.1")`, "loopback address"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("no error")
			}
			msg := tc.err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
		})
	}
	var ae *AddressError
	err := New(Config{}).CheckAddr(netip.MustParseAddr("64:ff9b::7f00:1"))
	if !errors.As(err, &ae) {
		t.Fatalf("CheckAddr error %v is not an *AddressError", err)
	}
	want := AddressError{Addr: netip.MustParseAddr("64:ff9b::7f00:1"), Class: ClassLoopback, Embedded: netip.MustParseAddr("127.0.0.1"), Form: "NAT64"}
	if diff := cmp.Diff(want, *ae, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("AddressError (-want +got):\n%s", diff)
	}
}

func TestClassNames(t *testing.T) {
	for c := ClassPublic; c <= ClassMetadata; c++ {
		if strings.HasPrefix(c.String(), "Class(") {
			t.Errorf("class %d has no name", c)
		}
	}
}
