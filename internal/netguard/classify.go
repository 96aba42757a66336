package netguard

import (
	"fmt"
	"net/netip"
)

// Class is what an IP address is, for the purpose of deciding whether a fetch may
// connect to it. The zero value, ClassPublic, is the only class always allowed.
type Class uint8

const (
	// ClassPublic is a globally routable unicast address.
	ClassPublic Class = iota
	// ClassLoopback is 127.0.0.0/8 or ::1.
	ClassLoopback
	// ClassPrivate is RFC 1918: 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16.
	ClassPrivate
	// ClassSharedAddress is the carrier-grade NAT range 100.64.0.0/10 (RFC 6598).
	ClassSharedAddress
	// ClassLinkLocal is 169.254.0.0/16 or fe80::/10.
	ClassLinkLocal
	// ClassUniqueLocal is the IPv6 ULA range fc00::/7.
	ClassUniqueLocal
	// ClassSiteLocal is the deprecated IPv6 site-local range fec0::/10, still routed
	// internally by some networks.
	ClassSiteLocal
	// ClassDocumentation is 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32
	// and 3fff::/20.
	ClassDocumentation
	// ClassBenchmark is 198.18.0.0/15 or 2001:2::/48. Proxies in "fake IP" mode hand out
	// 198.18.0.0/15 addresses that lead to arbitrary internal names.
	ClassBenchmark
	// ClassSpecialPurpose is another non-global range: IETF protocol assignments
	// 192.0.0.0/24, the 6to4 relay anycast 192.88.99.0/24, the discard prefix 100::/64,
	// local-use NAT64 64:ff9b:1::/48, ORCHID 2001:10::/28 and 2001:20::/28.
	ClassSpecialPurpose
	// ClassUnspecified is 0.0.0.0/8 ("this network") or ::. Connecting to it reaches
	// the local host.
	ClassUnspecified
	// ClassMulticast is 224.0.0.0/4 or ff00::/8.
	ClassMulticast
	// ClassBroadcast is 255.255.255.255.
	ClassBroadcast
	// ClassReserved is 240.0.0.0/4, an IPv4-compatible IPv6 address (::a.b.c.d) of a
	// public IPv4 address, or IPv6 space outside 2000::/3 that no other class covers.
	ClassReserved
	// ClassMetadata is a cloud instance-metadata or host-agent endpoint: 169.254.169.254
	// (AWS, GCP, Azure, OCI, DigitalOcean), 169.254.170.2 (ECS task metadata),
	// 169.254.170.23 and fd00:ec2::23 (EKS Pod Identity), fd00:ec2::254 (AWS IPv6 IMDS),
	// 100.100.100.200 (Alibaba Cloud) and 168.63.129.16 (Azure WireServer).
	ClassMetadata
)

var classNames = [...]string{
	ClassPublic:         "public",
	ClassLoopback:       "loopback",
	ClassPrivate:        "private (RFC 1918)",
	ClassSharedAddress:  "shared address space (CGNAT)",
	ClassLinkLocal:      "link-local",
	ClassUniqueLocal:    "unique local (ULA)",
	ClassSiteLocal:      "site-local",
	ClassDocumentation:  "documentation",
	ClassBenchmark:      "benchmarking",
	ClassSpecialPurpose: "special-purpose",
	ClassUnspecified:    "unspecified",
	ClassMulticast:      "multicast",
	ClassBroadcast:      "broadcast",
	ClassReserved:       "reserved",
	ClassMetadata:       "cloud metadata",
}

// String returns a short description such as "loopback" or "cloud metadata".
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Private reports whether Config.AllowPrivate (or a Config.Allow prefix) lifts the
// refusal of c. Metadata, unspecified, multicast, broadcast and reserved addresses are
// never allowed; public ones always are.
func (c Class) Private() bool {
	switch c {
	case ClassLoopback, ClassPrivate, ClassSharedAddress, ClassLinkLocal, ClassUniqueLocal,
		ClassSiteLocal, ClassDocumentation, ClassBenchmark, ClassSpecialPurpose:
		return true
	}
	return false
}

// Classify returns the class of a. Addresses that embed an IPv4 address — IPv4-mapped
// (::ffff:a.b.c.d), SIIT (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96), IPv4-compatible
// (::a.b.c.d), 6to4 (2002::/16) and Teredo (2001::/32) — take the class of the embedded
// address when it is not public, since that is where a packet can end up. The zone of a
// scoped address is ignored. An invalid Addr is ClassReserved.
func Classify(a netip.Addr) Class {
	return classify(a).class
}

// verdict is a classification with the embedded IPv4 address that decided it, if any.
type verdict struct {
	class    Class
	embedded netip.Addr // zero unless an embedded IPv4 address decided the class
	form     string     // how it was embedded: "IPv4-mapped", "NAT64", ...
}

var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("169.254.170.2"),
	netip.MustParseAddr("169.254.170.23"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("fd00:ec2::23"),
}

type rangeClass struct {
	prefix netip.Prefix
	class  Class
}

func p(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// ipv4Ranges is searched in order; the first match wins.
var ipv4Ranges = []rangeClass{
	{p("255.255.255.255/32"), ClassBroadcast},
	{p("0.0.0.0/8"), ClassUnspecified},
	{p("10.0.0.0/8"), ClassPrivate},
	{p("100.64.0.0/10"), ClassSharedAddress},
	{p("127.0.0.0/8"), ClassLoopback},
	{p("169.254.0.0/16"), ClassLinkLocal},
	{p("172.16.0.0/12"), ClassPrivate},
	{p("192.0.0.0/24"), ClassSpecialPurpose},
	{p("192.0.2.0/24"), ClassDocumentation},
	{p("192.88.99.0/24"), ClassSpecialPurpose},
	{p("192.168.0.0/16"), ClassPrivate},
	{p("198.18.0.0/15"), ClassBenchmark},
	{p("198.51.100.0/24"), ClassDocumentation},
	{p("203.0.113.0/24"), ClassDocumentation},
	{p("224.0.0.0/4"), ClassMulticast},
	{p("240.0.0.0/4"), ClassReserved},
}

// ipv6Ranges is searched in order after the embedded forms; the first match wins.
var ipv6Ranges = []rangeClass{
	{p("::/128"), ClassUnspecified},
	{p("::1/128"), ClassLoopback},
	{p("64:ff9b:1::/48"), ClassSpecialPurpose},
	{p("100::/64"), ClassSpecialPurpose},
	{p("2001:2::/48"), ClassBenchmark},
	{p("2001:10::/28"), ClassSpecialPurpose},
	{p("2001:20::/28"), ClassSpecialPurpose},
	{p("2001:db8::/32"), ClassDocumentation},
	{p("3fff::/20"), ClassDocumentation},
	{p("fc00::/7"), ClassUniqueLocal},
	{p("fe80::/10"), ClassLinkLocal},
	{p("fec0::/10"), ClassSiteLocal},
	{p("ff00::/8"), ClassMulticast},
}

var (
	mappedPrefix  = p("::ffff:0:0/96")
	siitPrefix    = p("::ffff:0:0:0/96")
	nat64Prefix   = p("64:ff9b::/96")
	compatPrefix  = p("::/96")
	sixToFour     = p("2002::/16")
	teredoPrefix  = p("2001::/32")
	globalUnicast = p("2000::/3")
)

func classify(a netip.Addr) verdict {
	if !a.IsValid() {
		return verdict{class: ClassReserved}
	}
	a = a.WithZone("")
	for _, m := range metadataAddrs {
		if a == m {
			return verdict{class: ClassMetadata}
		}
	}
	if a.Is4() {
		for _, r := range ipv4Ranges {
			if r.prefix.Contains(a) {
				return verdict{class: r.class}
			}
		}
		return verdict{class: ClassPublic}
	}
	b := a.As16()
	v4 := func(off int) netip.Addr { return netip.AddrFrom4([4]byte{b[off], b[off+1], b[off+2], b[off+3]}) }
	embedded := func(e netip.Addr, form string, public Class) verdict {
		if c := classify(e).class; c != ClassPublic {
			return verdict{class: c, embedded: e, form: form}
		}
		return verdict{class: public}
	}
	switch {
	case mappedPrefix.Contains(a):
		return embedded(v4(12), "IPv4-mapped", ClassPublic)
	case siitPrefix.Contains(a):
		return embedded(v4(12), "IPv4-translated", ClassPublic)
	case nat64Prefix.Contains(a):
		return embedded(v4(12), "NAT64", ClassPublic)
	case a == netip.IPv6Unspecified():
		return verdict{class: ClassUnspecified}
	case a == netip.IPv6Loopback():
		return verdict{class: ClassLoopback}
	case compatPrefix.Contains(a):
		return embedded(v4(12), "IPv4-compatible", ClassReserved)
	case sixToFour.Contains(a):
		return embedded(v4(2), "6to4", ClassPublic)
	case teredoPrefix.Contains(a):
		if v := embedded(v4(4), "Teredo server", ClassPublic); v.class != ClassPublic {
			return v
		}
		client := netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		return embedded(client, "Teredo client", ClassPublic)
	}
	for _, r := range ipv6Ranges {
		if r.prefix.Contains(a) {
			return verdict{class: r.class}
		}
	}
	if !globalUnicast.Contains(a) {
		return verdict{class: ClassReserved}
	}
	return verdict{class: ClassPublic}
}
