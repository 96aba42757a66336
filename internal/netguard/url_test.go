package netguard

import (
	"errors"
	"net/netip"
	"net/url"
	"strings"
	"testing"
)

func TestParseIPv4Host(t *testing.T) {
	tests := []struct {
		host      string
		want      string // "" when not IPv4 or invalid
		isIPv4    bool
		canonical bool
		invalid   bool
	}{
		{"example.com", "", false, false, false},
		{"mcp.example.com", "", false, false, false},
		{"localhost", "", false, false, false},
		{"1.2.3.x", "", false, false, false},
		{"0x", "0.0.0.0", true, false, false},
		{"127.0.0.1", "127.0.0.1", true, true, false},
		{"2130706433", "127.0.0.1", true, false, false},
		{"0177.0.0.1", "127.0.0.1", true, false, false},
		{"0x7f.1", "127.0.0.1", true, false, false},
		{"0x7F.0.0.1", "127.0.0.1", true, false, false},
		{"0x7f000001", "127.0.0.1", true, false, false},
		{"017700000001", "127.0.0.1", true, false, false},
		{"127.1", "127.0.0.1", true, false, false},
		{"127.0.1", "127.0.0.1", true, false, false},
		{"127.0.0.1.", "127.0.0.1", true, false, false},
		{"0300.0250.0.1", "192.168.0.1", true, false, false},
		{"3232235521", "192.168.0.1", true, false, false},
		{"0xa9fea9fe", "169.254.169.254", true, false, false},
		{"169.254.43518", "169.254.169.254", true, false, false},
		{"134744072", "8.8.8.8", true, false, false},
		{"010.0.0.1", "8.0.0.1", true, false, false},
		{"1.2.3.4.5", "", true, false, true},
		{"256.0.0.1", "", true, false, true},
		{"1.2.3.256", "", true, false, true},
		{"4294967296", "", true, false, true},
		{"08.0.0.1", "", true, false, true},
		{"0x1g.1", "", true, false, true},
		{"1..1", "", true, false, true},
		{"example.123", "", true, false, true},
		{"99999999999999999999999", "", true, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.host, func(t *testing.T) {
			a, isIPv4, canonical, err := parseIPv4Host(tc.host)
			if isIPv4 != tc.isIPv4 || (err != nil) != tc.invalid {
				t.Fatalf("parseIPv4Host(%q) = %v, isIPv4=%v, err=%v; want isIPv4=%v invalid=%v", tc.host, a, isIPv4, err, tc.isIPv4, tc.invalid)
			}
			if tc.want != "" && a != netip.MustParseAddr(tc.want) {
				t.Errorf("parseIPv4Host(%q) = %v, want %s", tc.host, a, tc.want)
			}
			if canonical != tc.canonical {
				t.Errorf("parseIPv4Host(%q) canonical = %v, want %v", tc.host, canonical, tc.canonical)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	type want int
	const (
		ok want = iota
		badURL
		forbidden
		metadata
	)
	tests := []struct {
		url          string
		strict, lax  want // default policy, AllowPrivate
		class        Class
		checkClassOf bool
	}{
		{"https://mcp.example.com/mcp", ok, ok, 0, false},
		{"http://mcp.example.com:8080/sse", ok, ok, 0, false},
		{"HTTPS://MCP.EXAMPLE.COM/", ok, ok, 0, false},
		{"https://8.8.8.8/", ok, ok, 0, false},
		{"https://[2606:4700::1111]/", ok, ok, 0, false},
		{"http://127.0.0.1:3000/mcp", forbidden, ok, ClassLoopback, true},
		{"http://[::1]:3000/", forbidden, ok, ClassLoopback, true},
		{"http://localhost:3000/", forbidden, ok, ClassLoopback, true},
		{"http://tools.localhost./", forbidden, ok, ClassLoopback, true},
		{"http://10.1.2.3/", forbidden, ok, ClassPrivate, true},
		{"http://[fe80::1%25eth0]/", forbidden, ok, ClassLinkLocal, true},
		{"http://0.0.0.0:8080/", forbidden, forbidden, ClassUnspecified, true},
		{"http://169.254.169.254/latest/meta-data/", metadata, metadata, ClassMetadata, true},
		{"http://[fd00:ec2::254]/", metadata, metadata, ClassMetadata, true},
		{"http://[::ffff:169.254.169.254]/", metadata, metadata, ClassMetadata, true},
		{"http://[::ffff:a9fe:a9fe]/", metadata, metadata, ClassMetadata, true},
		{"http://[64:ff9b::a9fe:a9fe]/", metadata, metadata, ClassMetadata, true},
		{"http://[::ffff:127.0.0.1]/", forbidden, ok, ClassLoopback, true},
		// Odd IPv4 spellings: the address they mean decides the refusal's class, and
		// they are refused as URLs even when the address would be allowed.
		{"http://2130706433/", forbidden, badURL, ClassLoopback, true},
		{"http://0177.0.0.1/", forbidden, badURL, ClassLoopback, true},
		{"http://0x7f.1/", forbidden, badURL, ClassLoopback, true},
		{"http://0x7f000001:8080/", forbidden, badURL, ClassLoopback, true},
		{"http://127.1/", forbidden, badURL, ClassLoopback, true},
		{"http://127.0.0.1./", forbidden, badURL, ClassLoopback, true},
		{"http://0300.0250.0.1/", forbidden, badURL, ClassPrivate, true},
		{"http://0xa9fea9fe/", metadata, metadata, ClassMetadata, true},
		{"http://2852039166/", metadata, metadata, ClassMetadata, true},
		{"http://134744072/", badURL, badURL, 0, false},
		{"http://1.2.3.4.5/", badURL, badURL, 0, false},
		{"http://256.1.1.1/", badURL, badURL, 0, false},
		// Hosts outside ASCII are judged by their IDNA (UTS 46) form, as resolvers see them:
		// ideographic full stops and full-width letters and digits spell the same address.
		{"http://127\u30020\u30020\u30021:18710/", forbidden, badURL, ClassLoopback, true},
		{"http://\uff11\uff12\uff17.0.0.1/", forbidden, badURL, ClassLoopback, true},
		{"http://169\uff0e254\uff0e169\uff0e254/", metadata, metadata, ClassMetadata, true},
		{"http://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54:3000/", forbidden, ok, ClassLoopback, true},
		{"http://tools\u3002localhost/", forbidden, ok, ClassLoopback, true},
		{"https://b\u00fccher.example/mcp", ok, ok, 0, false},
		{"https://xn--bcher-kva.example/mcp", ok, ok, 0, false},
		{"http://exa\u200dmple.com/", badURL, badURL, 0, false},
		// Form.
		{"ftp://example.com/", badURL, badURL, 0, false},
		{"file:///etc/passwd", badURL, badURL, 0, false},
		{"gopher://example.com/", badURL, badURL, 0, false},
		{"javascript:alert(1)", badURL, badURL, 0, false},
		{"http:example.com", badURL, badURL, 0, false},
		{"http://user:secret@example.com/", badURL, badURL, 0, false},
		{"http://127.0.0.1:80@example.com/", badURL, badURL, 0, false},
		{"http://user@example.com/", badURL, badURL, 0, false},
		{"http:///path", badURL, badURL, 0, false},
		{"http://example.com:0/", badURL, badURL, 0, false},
		{"/relative", badURL, badURL, 0, false},
	}
	guards := []*Guard{New(Config{}), New(Config{AllowPrivate: true})}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			for i, w := range []want{tc.strict, tc.lax} {
				u, err := url.Parse(tc.url)
				if err != nil {
					t.Fatalf("url.Parse: %v", err)
				}
				err = guards[i].CheckURL(u)
				var got want
				switch {
				case err == nil:
					got = ok
				case errors.Is(err, ErrMetadataAddress):
					got = metadata
				case errors.Is(err, ErrForbiddenAddress):
					got = forbidden
				case errors.Is(err, ErrInvalidURL):
					got = badURL
				default:
					t.Fatalf("guard %d: CheckURL error %v wraps no sentinel", i, err)
				}
				if got != w {
					t.Errorf("guard %d: CheckURL(%s) = %v, want outcome %d, got %d", i, tc.url, err, w, got)
				}
				var ae *AddressError
				if tc.checkClassOf && errors.As(err, &ae) && ae.Class != tc.class {
					t.Errorf("guard %d: refused as %v, want %v", i, ae.Class, tc.class)
				}
				if err != nil && strings.Contains(err.Error(), "secret") {
					t.Errorf("error %q leaks the password", err)
				}
			}
		})
	}
}

func TestParseURL(t *testing.T) {
	g := New(Config{})
	if _, err := g.ParseURL("https://mcp.example.com/mcp"); err != nil {
		t.Errorf("ParseURL(valid) = %v", err)
	}
	if _, err := g.ParseURL("http://user:secret@[::1"); !errors.Is(err, ErrInvalidURL) || strings.Contains(err.Error(), "secret") {
		t.Errorf("ParseURL(malformed) = %v, want ErrInvalidURL without the password", err)
	}
	if err := g.CheckURL(nil); !errors.Is(err, ErrInvalidURL) {
		t.Errorf("CheckURL(nil) = %v", err)
	}
}

func FuzzParseIPv4Host(f *testing.F) {
	for _, s := range []string{"127.0.0.1", "2130706433", "0177.0.0.1", "0x7f.1", "127.1", "1.2.3.4.5", "0x", "08.1", "example.com", "1.2.3.4."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, host string) {
		a, isIPv4, canonical, err := parseIPv4Host(host)
		if err == nil && isIPv4 && !a.Is4() {
			t.Fatalf("parseIPv4Host(%q) = %v, not IPv4", host, a)
		}
		if canonical && a.String() != host {
			t.Fatalf("parseIPv4Host(%q) canonical but formats as %v", host, a)
		}
		// Whatever Go's strict parser accepts as IPv4 we accept as the same, canonical address.
		if b, perr := netip.ParseAddr(host); perr == nil && b.Is4() {
			if err != nil || !isIPv4 || !canonical || a != b {
				t.Fatalf("parseIPv4Host(%q) = %v %v %v %v, netip says %v", host, a, isIPv4, canonical, err, b)
			}
		}
	})
}

func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://mcp.example.com/mcp", "http://0x7f.1/", "http://[::ffff:127.0.0.1]/", "http://u:p@h/", "ftp://x", "http://2130706433:99/"} {
		f.Add(s)
	}
	g := New(Config{})
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := g.ParseURL(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalidURL) && !errors.Is(err, ErrForbiddenAddress) {
				t.Fatalf("ParseURL(%q) = %v wraps no sentinel", raw, err)
			}
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.User != nil || u.Hostname() == "" {
			t.Fatalf("ParseURL(%q) accepted %#v", raw, u)
		}
		host := u.Hostname()
		if a, perr := netip.ParseAddr(host); perr == nil && Classify(a) != ClassPublic {
			t.Fatalf("ParseURL(%q) accepted non-public %v", raw, a)
		}
		if _, isIPv4, canonical, _ := parseIPv4Host(host); isIPv4 && !canonical {
			t.Fatalf("ParseURL(%q) accepted odd IPv4 spelling %q", raw, host)
		}
	})
}
