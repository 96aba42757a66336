// Package netguard makes outbound HTTP fetches of MCP servers safe against server-side
// request forgery: a URL, a DNS answer or a redirect chosen by someone else must not make
// toolwarrant connect to the operator's own machine, network or cloud metadata service.
//
// A Guard checks addresses, not names. Guard.DialContext resolves the host once through
// an injectable Resolver, refuses the whole host if any answer is forbidden, and then
// connects to the checked IP addresses themselves, so a resolver that answers "public"
// first and "private" later (DNS rebinding) gains nothing: the address checked is the
// address connected. A net.Dialer ControlContext hook (Guard.ControlContext) checks the
// socket's address once more just before connect. Guard.HTTPClient wires this into an
// *http.Client that ignores proxy environment variables, checks every request and
// redirect URL with Guard.CheckURL, caps redirects, refuses https-to-http downgrades,
// bounds time and limits response size (LimitBody).
//
// # Policy
//
// Classify sorts an address into a Class. Public addresses are allowed. Loopback,
// RFC 1918, CGNAT 100.64/10, link-local, IPv6 ULA and site-local, documentation,
// benchmarking and other special-purpose ranges are refused unless Config.AllowPrivate is
// set (tests and intranet servers) or the address is inside a Config.Allow prefix.
// Unspecified (0.0.0.0/8, ::), multicast, broadcast and reserved (240/4, unallocated
// IPv6) addresses are always refused. IPv6 forms that embed an IPv4 address —
// IPv4-mapped, IPv4-translated, NAT64 64:ff9b::/96, IPv4-compatible, 6to4 and Teredo —
// are judged by the IPv4 address they carry.
//
// Cloud metadata endpoints (169.254.169.254, 169.254.170.2, 169.254.170.23,
// fd00:ec2::254, fd00:ec2::23, 100.100.100.200, 168.63.129.16) are refused even with
// AllowPrivate, with an error that also wraps ErrMetadataAddress. This is deliberate:
// AllowPrivate exists so that a server on loopback or the intranet can be crawled, and
// no MCP server lives on a metadata address, while reaching one hands out the host's
// cloud credentials. There is no switch to allow them.
//
// Every refusal of an address is an *AddressError that names the address, the host and
// the class, and wraps ErrForbiddenAddress. Refusals of a URL's form wrap ErrInvalidURL.
//
// # URLs
//
// Guard.CheckURL allows only http and https, refuses userinfo, and recognises IPv4
// addresses in the spellings browsers and C resolvers accept (decimal 2130706433, octal
// 0177.0.0.1, hex 0x7f.1, short 127.1) as the addresses they mean, which Go's net.ParseIP
// would not; such spellings are always refused. "localhost" names count as loopback.
//
// # Tests
//
// Tests inject a Resolver that maps names to addresses and a Config.Dial that connects
// the checked address to a loopback listener, so "public" names can be served locally
// without weakening production: Dial only ever sees addresses that passed the policy.
package netguard
