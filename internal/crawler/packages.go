package crawler

import (
	"context"
	"net"

	"github.com/agentgate-dev/agentgate/internal/netguard"
	"github.com/agentgate-dev/agentgate/internal/pkgid"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// PackageChecker returns the crawl's check of pinned servers' packages
// (warrant.CrawlRequest.Packages): the registries of rc, and a server's TLS key read
// through the same address policy, resolver and TLS roots as its listing.
func PackageChecker(cfg Config, rc pkgid.Config) warrant.PackageChecker {
	if rc.TLSRoots == nil && cfg.TLSConfig != nil {
		rc.TLSRoots = cfg.TLSConfig.RootCAs
	}
	if rc.Timeout == 0 {
		rc.Timeout = cfg.withDefaults().Timeout
	}
	return pkgid.Checker{Resolver: pkgid.New(rc), Dial: func(s warrant.Server) pkgid.DialFunc { return DialFor(cfg, s) }}
}

// DialFor returns the dialer the crawler connects to s with: the address policy of s
// (its AllowPrivate), checked after resolution, on the address connected.
func DialFor(cfg Config, s warrant.Server) pkgid.DialFunc {
	g := netguard.New(netguard.Config{AllowPrivate: s.AllowPrivate, Resolver: cfg.Resolver, Dial: cfg.Dial})
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		return g.DialContext(ctx, network, address)
	}
}
