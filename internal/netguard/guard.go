package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/idna"
)

var (
	// ErrForbiddenAddress is wrapped by every refusal of an address, as an *AddressError
	// that names the address, the host it came from and its Class.
	ErrForbiddenAddress = errors.New("netguard: forbidden address")
	// ErrMetadataAddress is wrapped, in addition to ErrForbiddenAddress, when the refused
	// address is a cloud metadata endpoint. AllowPrivate never lifts it.
	ErrMetadataAddress = errors.New("netguard: cloud metadata address")
	// ErrInvalidURL is wrapped when a URL is refused before any address is considered:
	// a scheme other than http or https, userinfo, an empty or malformed host, an
	// IPv4 address spelled in a non-canonical form, or an https-to-http redirect.
	ErrInvalidURL = errors.New("netguard: refused URL")
)

// AddressError reports a refused address. It wraps ErrForbiddenAddress, and also
// ErrMetadataAddress for ClassMetadata.
type AddressError struct {
	// Host is the name (or spelling) that led to Addr; empty when Addr was given as a
	// literal or seen on a socket.
	Host string
	// Addr is the refused address.
	Addr netip.Addr
	// Class is why it was refused.
	Class Class
	// Embedded is the IPv4 address inside Addr that decided Class (IPv4-mapped, NAT64,
	// 6to4, ...); the zero Addr when none did.
	Embedded netip.Addr
	// Form names how Embedded is embedded ("IPv4-mapped", "NAT64", "6to4", ...).
	Form string
}

// Error says which address was refused, for which host, and why.
func (e *AddressError) Error() string {
	var b strings.Builder
	b.WriteString("netguard: refusing ")
	b.WriteString(e.Addr.String())
	if e.Embedded.IsValid() {
		fmt.Fprintf(&b, " (%s %s)", e.Form, e.Embedded)
	}
	// A numeric spelling ("0x7f.1") is refused whatever the policy, so the hint about
	// AllowPrivate would mislead.
	_, spelled, _, _ := parseIPv4Host(e.Host)
	switch {
	case e.Host != "" && spelled:
		fmt.Fprintf(&b, " (spelled %q)", e.Host)
	case e.Host != "":
		fmt.Fprintf(&b, " for host %q", e.Host)
	}
	fmt.Fprintf(&b, ": %s address", e.Class)
	switch {
	case e.Class == ClassMetadata:
		b.WriteString(", refused even with AllowPrivate")
	case e.Class.Private() && !spelled:
		b.WriteString(", allowed only with AllowPrivate")
	}
	return b.String()
}

// Unwrap returns ErrForbiddenAddress, and ErrMetadataAddress for ClassMetadata.
func (e *AddressError) Unwrap() []error {
	if e.Class == ClassMetadata {
		return []error{ErrForbiddenAddress, ErrMetadataAddress}
	}
	return []error{ErrForbiddenAddress}
}

// Resolver looks up the addresses of a host name. *net.Resolver implements it.
// Implementations must be safe for concurrent use.
type Resolver interface {
	// LookupNetIP returns the addresses of host; network is "ip", "ip4" or "ip6".
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Guard. The zero value refuses every non-public address and
// resolves with net.DefaultResolver.
type Config struct {
	// AllowPrivate allows the classes for which Class.Private is true: loopback,
	// RFC 1918, CGNAT, link-local, ULA, site-local, documentation, benchmarking and
	// special-purpose addresses, so that tests and intranet servers work. Cloud metadata,
	// unspecified, multicast, broadcast and reserved addresses stay refused. Default false.
	AllowPrivate bool
	// Allow lists prefixes whose addresses are allowed even when their class is private
	// and AllowPrivate is false, for an operator who trusts one internal range rather than
	// all of them. It cannot allow metadata, unspecified, multicast, broadcast or reserved
	// addresses. Default none.
	Allow []netip.Prefix
	// Resolver resolves host names. Default net.DefaultResolver.
	Resolver Resolver
	// LookupTimeout bounds one resolution. Default 5s.
	LookupTimeout time.Duration
	// DialTimeout bounds one connection attempt. Default 10s.
	DialTimeout time.Duration
	// Dial, when set, replaces the final connect step: it receives only addresses that
	// have passed the policy and must connect to exactly that address. Tests use it to
	// map documentation addresses onto loopback listeners. Default nil: a net.Dialer
	// with DialTimeout whose ControlContext re-checks the socket's address.
	Dial func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)
}

// maxDialAddrs bounds how many of a host's addresses one DialContext tries.
const maxDialAddrs = 4

// Guard applies the address policy to connections. Its methods are safe for concurrent
// use; a Guard is immutable after New.
type Guard struct {
	allowPrivate  bool
	allow         []netip.Prefix
	resolver      Resolver
	lookupTimeout time.Duration
	dialTimeout   time.Duration
	dial          func(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error)
}

// New returns a Guard for cfg.
func New(cfg Config) *Guard {
	g := &Guard{
		allowPrivate:  cfg.AllowPrivate,
		allow:         append([]netip.Prefix(nil), cfg.Allow...),
		resolver:      cfg.Resolver,
		lookupTimeout: cfg.LookupTimeout,
		dialTimeout:   cfg.DialTimeout,
		dial:          cfg.Dial,
	}
	if g.resolver == nil {
		g.resolver = net.DefaultResolver
	}
	if g.lookupTimeout <= 0 {
		g.lookupTimeout = 5 * time.Second
	}
	if g.dialTimeout <= 0 {
		g.dialTimeout = 10 * time.Second
	}
	if g.dial == nil {
		g.dial = g.netDial
	}
	return g
}

// CheckAddr returns an *AddressError (wrapping ErrForbiddenAddress) when the policy
// refuses a, and nil when a connection to a is allowed.
func (g *Guard) CheckAddr(a netip.Addr) error {
	return g.check("", a)
}

func (g *Guard) check(host string, a netip.Addr) error {
	v := classify(a)
	if v.class == ClassPublic {
		return nil
	}
	if v.class.Private() {
		if g.allowPrivate {
			return nil
		}
		plain := a.WithZone("")
		for _, pfx := range g.allow {
			if pfx.Contains(plain) || (plain.Is4In6() && pfx.Contains(plain.Unmap())) {
				return nil
			}
		}
	}
	return &AddressError{Host: host, Addr: a, Class: v.class, Embedded: v.embedded, Form: v.form}
}

// DialContext resolves the host of address, refuses the connection if any resolved
// address is forbidden, and otherwise connects to the checked addresses themselves (at
// most four, in the resolver's order, stopping at the first that answers), never to the
// name. Because the address that is checked is the address that is connected, a
// resolver that answers differently the next time (DNS rebinding) cannot slip a private
// address past the check. network must be "tcp", "tcp4" or "tcp6"; the port must be
// numeric. A host that is an IPv4 address in a non-canonical spelling ("0x7f.1",
// "2130706433") is refused. It has the signature of http.Transport.DialContext.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	ipNet, ok := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
	if !ok {
		return nil, fmt.Errorf("netguard: dial %s: network %q not supported", address, network)
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: %w", address, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("netguard: dial %s: port %q is not a number", address, portStr)
	}
	addrs, err := g.resolve(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for i, a := range addrs {
		if i == maxDialAddrs || ctx.Err() != nil {
			break
		}
		c, err := g.dial(ctx, network, netip.AddrPortFrom(a, uint16(port)))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("netguard: dial %s: %w", address, errors.Join(errs...))
}

// resolve returns the checked addresses of host, or the first refusal.
func (g *Guard) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if err := g.check("", a); err != nil {
			return nil, err
		}
		return []netip.Addr{a}, nil
	}
	if err := g.checkHostName(host); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, g.lookupTimeout)
	defer cancel()
	addrs, err := g.resolver.LookupNetIP(lctx, network, host)
	if err != nil {
		return nil, fmt.Errorf("netguard: resolve %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("netguard: resolve %q: no addresses", host)
	}
	// One forbidden answer refuses the host: a name that points at an internal
	// address is hostile or misconfigured even if it also has public ones.
	for _, a := range addrs {
		if err := g.check(host, a); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// checkHostName refuses host names that name an address without DNS: numeric IPv4
// spellings and the localhost names of RFC 6761.
func (g *Guard) checkHostName(host string) error {
	if host == "" {
		return fmt.Errorf("%w: empty host", ErrInvalidURL)
	}
	// A host outside ASCII is checked as the name resolvers and HTTP clients will use: its
	// UTS 46 (IDNA) form, where "127。0。0。1" (ideographic full stops) and full-width digits
	// become 127.0.0.1 and "ｌｏｃａｌｈｏｓｔ" becomes localhost.
	if !isASCII(host) {
		ascii, err := idna.Lookup.ToASCII(host)
		if err != nil {
			return fmt.Errorf("%w: host %q is not a valid internationalised domain name: %v", ErrInvalidURL, host, err)
		}
		if _, isIPv4, _, _ := parseIPv4Host(ascii); isIPv4 {
			if err := g.checkHostName(ascii); err != nil {
				return err
			}
			return fmt.Errorf("%w: host %q is a non-ASCII spelling of %s", ErrInvalidURL, host, ascii)
		}
		host = ascii
	}
	a, isIPv4, canonical, err := parseIPv4Host(host)
	switch {
	case err != nil:
		return fmt.Errorf("%w: host %q: %v", ErrInvalidURL, host, err)
	case isIPv4 && !canonical:
		if err := g.check(host, a); err != nil {
			return err
		}
		return fmt.Errorf("%w: host %q is a non-canonical spelling of %s", ErrInvalidURL, host, a)
	case isIPv4:
		return g.check("", a)
	}
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return g.check(host, netip.AddrFrom4([4]byte{127, 0, 0, 1}))
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

func (g *Guard) netDial(ctx context.Context, network string, addr netip.AddrPort) (net.Conn, error) {
	d := net.Dialer{Timeout: g.dialTimeout, KeepAlive: 30 * time.Second, ControlContext: g.ControlContext}
	return d.DialContext(ctx, network, addr.String())
}

// ControlContext checks the address a socket is about to connect to, for use as
// net.Dialer.ControlContext: it is the second belt behind DialContext's check of the
// resolved addresses, and lets a caller with its own net.Dialer apply the same policy.
// It returns an *AddressError for a forbidden address and an error for an address that
// does not parse.
func (g *Guard) ControlContext(_ context.Context, network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("netguard: %s socket address %q: %w", network, address, err)
	}
	return g.check("", ap.Addr())
}
