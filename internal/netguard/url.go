package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// ParseURL parses raw and applies CheckURL to it.
func (g *Guard) ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input, which may hold credentials; report the cause only.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	if err := g.CheckURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// CheckURL checks a URL before anything is resolved or connected: the scheme must be
// http or https, there must be no userinfo (credentials in URLs leak into logs and
// Referer headers, and "http://trusted@evil/" misleads readers), the host must be
// non-empty, the port numeric, and a literal address must pass the policy. A host that
// is an IPv4 address in any spelling a browser or C resolver accepts — decimal
// "2130706433", octal "0177.0.0.1", hex "0x7f.1", short forms "127.1", a trailing dot —
// is recognised as the address it means: refused with an *AddressError when that address
// is forbidden, and with ErrInvalidURL otherwise, because no legitimate server URL is
// spelled that way. "localhost" and "*.localhost" count as 127.0.0.1.
//
// Host names are not resolved here; DialContext checks what they resolve to.
func (g *Guard) CheckURL(u *url.URL) error {
	if u == nil {
		return fmt.Errorf("%w: nil URL", ErrInvalidURL)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q, want http or https", ErrInvalidURL, u.Scheme)
	}
	if u.User != nil {
		return fmt.Errorf("%w: %s has userinfo", ErrInvalidURL, u.Redacted())
	}
	if u.Opaque != "" {
		return fmt.Errorf("%w: opaque URL %q", ErrInvalidURL, u.Scheme+":"+u.Opaque)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: %s has no host", ErrInvalidURL, u.Redacted())
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return fmt.Errorf("%w: port %q", ErrInvalidURL, port)
		}
	}
	if strings.HasPrefix(u.Host, "[") {
		a, err := netip.ParseAddr(host)
		if err != nil {
			return fmt.Errorf("%w: IPv6 literal %q: %v", ErrInvalidURL, host, err)
		}
		return g.check("", a)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Is6() {
			return fmt.Errorf("%w: unbracketed IPv6 host %q", ErrInvalidURL, host)
		}
		return g.check("", a)
	}
	return g.checkHostName(host)
}

// parseIPv4Host interprets host the way the WHATWG URL standard's IPv4 parser (and
// inet_aton) do. isIPv4 is false for an ordinary host name. When it is true, err
// reports a host that looks numeric but is no valid address ("1.2.3.4.5", "256.1.1.1",
// "08.1.1.1"); otherwise a is the address and canonical tells whether host was written
// as the plain dotted quad.
//
// The rules: a trailing dot is dropped; if the last label is a number (decimal digits,
// or 0x followed by hex digits) the host is IPv4; it has one to four labels, each
// decimal, octal (leading 0) or hex (leading 0x); all but the last are at most 255 and
// the last fills the remaining bytes.
func parseIPv4Host(host string) (a netip.Addr, isIPv4, canonical bool, err error) {
	h := host
	trailingDot := strings.HasSuffix(h, ".")
	if trailingDot {
		h = h[:len(h)-1]
	}
	labels := strings.Split(h, ".")
	if !numericLabel(labels[len(labels)-1]) {
		return netip.Addr{}, false, false, nil
	}
	if len(labels) > 4 {
		return netip.Addr{}, true, false, errors.New("more than four numeric parts")
	}
	canonical = !trailingDot && len(labels) == 4
	var v uint64
	for i, l := range labels {
		n, plain, err := parseIPv4Label(l)
		if err != nil {
			return netip.Addr{}, true, false, err
		}
		canonical = canonical && plain
		if i < len(labels)-1 {
			if n > 255 {
				return netip.Addr{}, true, false, fmt.Errorf("part %q exceeds 255", l)
			}
			v = v<<8 | n
			continue
		}
		rest := uint(8 * (5 - len(labels)))
		if n >= 1<<rest {
			return netip.Addr{}, true, false, fmt.Errorf("last part %q exceeds %d bits", l, rest)
		}
		v = v<<rest | n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true, canonical, nil
}

// numericLabel reports the WHATWG "ends in a number" test for one label.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0X") {
		for _, c := range l[2:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isHex(c rune) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// parseIPv4Label parses one label; plain reports decimal without a leading zero.
func parseIPv4Label(l string) (n uint64, plain bool, err error) {
	if l == "" {
		return 0, false, errors.New("empty part")
	}
	base, digits := 10, l
	switch {
	case strings.HasPrefix(l, "0x") || strings.HasPrefix(l, "0X"):
		base, digits = 16, l[2:]
		if digits == "" {
			return 0, false, nil // "0x" is zero
		}
	case len(l) > 1 && l[0] == '0':
		base, digits = 8, l[1:]
	}
	n, err = strconv.ParseUint(digits, base, 32)
	if err != nil {
		return 0, false, fmt.Errorf("part %q is not a number below 2^32", l)
	}
	return n, base == 10, nil
}
