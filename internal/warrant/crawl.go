package warrant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// CrawlTarget is one server to list and the values of its headers, resolved for this
// crawl. The values are secrets: they are sent to the server and never logged (LogValue
// shows the header names only) or put in errors.
type CrawlTarget struct {
	Server  Server
	Headers map[string]string
}

// LogValue shows the server and its header names, never their values.
func (t CrawlTarget) LogValue() slog.Value {
	names := make([]string, 0, len(t.Headers))
	for h := range t.Headers {
		names = append(names, h)
	}
	slices.Sort(names)
	return slog.GroupValue(slog.String("server", t.Server.Name), slog.String("headers", strings.Join(names, ",")))
}

// Listed is what listing one server gave: its complete listing, or why there is none.
type Listed struct {
	Server string
	// Listing is the complete listing; nil when Err is set.
	Listing *Listing
	// Transport is the transport that answered ("http" or "sse").
	Transport string
	// Elapsed is how long the listing took.
	Elapsed time.Duration
	// Err says why the server could not be listed, naming it.
	Err error
}

// Lister lists the tools of servers: internal/crawler, over the network.
type Lister interface {
	// List lists every target, and returns one Listed per target. It returns when
	// every listing has finished or ctx is done (the rest then fail).
	List(ctx context.Context, targets []CrawlTarget) []Listed
}

// HeaderResolver returns the values of a server's headers (Server.Headers) for one crawl:
// internal/config.HeaderResolver, from environment variables, and on AWS from Secrets
// Manager or SSM. An error fails that server only; it names the header and where its
// value was to come from, never the value.
type HeaderResolver func(ctx context.Context, s Server) (map[string]string, error)

// CrawlRequest is one crawl run.
type CrawlRequest struct {
	// Servers names the servers to crawl, in any order, duplicates allowed; none means
	// every server in the catalog.
	Servers []string
	// RefuseUnknown makes a name that is not in the catalog fail the whole run, before
	// anything is listed (an *UnknownServerError): the CLI, where it is a typo. Default
	// false: it is that server's outcome (StageSelect), and the others are crawled: the
	// crawl function, whose event may name a server removed since.
	RefuseUnknown bool
	// Headers resolves each server's header values. Required.
	Headers HeaderResolver
	// Lister lists the servers. Required.
	Lister Lister
	// Packages checks the package of each server that has a pin before it is listed. A
	// pinned server is refused (StagePackage) when it is nil: it cannot be checked.
	Packages PackageChecker
}

// CrawlStage is the step of a crawl run at which a server failed.
type CrawlStage string

// The steps of a crawl run, in order.
const (
	// StageSelect: the server named is not in the catalog.
	StageSelect CrawlStage = "select"
	// StageHeaders: a header value could not be resolved; the server was not listed.
	StageHeaders CrawlStage = "headers"
	// StagePackage: the server's package is not what was pinned (a *PackageDriftError),
	// or could not be checked; the server was not listed.
	StagePackage CrawlStage = "package"
	// StageList: the server could not be listed (unreachable, refused by the address
	// policy, not speaking MCP, too large, too slow).
	StageList CrawlStage = "list"
	// StageRecord: the listing could not be recorded (Ingest).
	StageRecord CrawlStage = "record"
)

// CrawlOutcome is what a crawl run did for one server.
type CrawlOutcome struct {
	Server string
	// Failed is the step that failed, "" when the crawl was recorded; Err says why.
	Failed CrawlStage
	Err    error
	// Transport is the transport that answered, once listed.
	Transport string
	// Tools is how many tools were listed (0 before StageRecord).
	Tools int
	// Elapsed is how long listing and recording took.
	Elapsed time.Duration
	// Result is what Ingest recorded (when Failed is "").
	Result IngestResult
}

// Listed reports whether the run tried to list the server (it was in the catalog and its
// headers resolved).
func (o CrawlOutcome) Listed() bool {
	return o.Failed != StageSelect && o.Failed != StageHeaders && o.Failed != StagePackage
}

// UnknownServerError is a server name a crawl run was asked for that is not in the
// catalog. It wraps ErrNotFound.
type UnknownServerError struct{ Name string }

// Error says the server is not in the catalog.
func (e *UnknownServerError) Error() string {
	return fmt.Sprintf("server %q is not in the catalog", e.Name)
}

// Unwrap returns ErrNotFound.
func (e *UnknownServerError) Unwrap() error { return ErrNotFound }

// crawlByName is the most servers a crawl request names that Crawl reads one by one
// (Catalog.Server) rather than with the whole server list (Catalog.Servers).
const crawlByName = 64

// Crawl runs one crawl, the same from the CLI and the crawl function: it selects the
// servers (req.Servers, else all), resolves each one's headers, checks the package of
// each pinned one (req.Packages), lists them all through
// req.Lister, and records each listing with Ingest, one server after the other. It
// returns one outcome per server, sorted by server (stable). A server that fails at any
// step is its own outcome and the others go on: one unreachable upstream must not hide
// the rest. The run itself fails only when the catalog's servers cannot be read, or with
// RefuseUnknown on an unknown name (nothing is listed then).
func (s *Service) Crawl(ctx context.Context, req CrawlRequest) ([]CrawlOutcome, error) {
	if req.Headers == nil || req.Lister == nil {
		return nil, errors.New("warrant: CrawlRequest.Headers and Lister are required")
	}
	// A run of a few named servers (a fan-out worker's batch, `crawl a b`) reads them by
	// name: reading the whole server list instead would cost every invocation of the
	// fan-out a read of every server.
	var servers []Server
	byName := len(req.Servers) > 0 && len(req.Servers) <= crawlByName
	if !byName {
		var err error
		if servers, err = s.cat.Servers(ctx); err != nil {
			return nil, err
		}
	}
	lookup := func(n string) (Server, bool, error) {
		if !byName {
			i := slices.IndexFunc(servers, func(srv Server) bool { return srv.Name == n })
			if i < 0 {
				return Server{}, false, nil
			}
			return servers[i], true, nil
		}
		srv, err := s.cat.Server(ctx, n)
		if errors.Is(err, ErrNotFound) {
			return Server{}, false, nil
		}
		return srv, err == nil, err
	}
	out := []CrawlOutcome{}
	if len(req.Servers) > 0 {
		var picked []Server
		for _, n := range req.Servers {
			if slices.ContainsFunc(picked, func(srv Server) bool { return srv.Name == n }) {
				continue
			}
			srv, ok, err := lookup(n)
			switch {
			case err != nil:
				return nil, err
			case !ok && req.RefuseUnknown:
				return nil, &UnknownServerError{Name: n}
			case !ok:
				out = append(out, CrawlOutcome{Server: n, Failed: StageSelect, Err: &UnknownServerError{Name: n}})
			default:
				picked = append(picked, srv)
			}
		}
		servers = picked
	}
	var targets []CrawlTarget
	for _, srv := range servers {
		h, err := req.Headers(ctx, srv)
		if err != nil {
			out = append(out, CrawlOutcome{Server: srv.Name, Failed: StageHeaders, Err: err})
			continue
		}
		if pin := srv.Package; pin != nil {
			err := fmt.Errorf("server %q has a package pin and this crawl cannot check it", srv.Name)
			if req.Packages != nil {
				err = req.Packages.CheckPackage(ctx, srv, *pin)
			}
			if err != nil {
				out = append(out, CrawlOutcome{Server: srv.Name, Failed: StagePackage, Err: err})
				continue
			}
		}
		targets = append(targets, CrawlTarget{Server: srv, Headers: h})
	}
	if len(targets) > 0 {
		run := &crawlRun{}
		for _, l := range req.Lister.List(ctx, targets) {
			o := CrawlOutcome{Server: l.Server, Transport: l.Transport, Elapsed: l.Elapsed}
			if l.Err != nil || l.Listing == nil {
				o.Failed, o.Err = StageList, l.Err
				if o.Err == nil {
					o.Err = fmt.Errorf("server %q: no listing", l.Server)
				}
				out = append(out, o)
				continue
			}
			o.Tools = len(l.Listing.Tools)
			start := s.now()
			res, err := s.ingest(ctx, *l.Listing, run)
			o.Elapsed += s.now().Sub(start)
			if err != nil {
				o.Failed, o.Err = StageRecord, err
			} else {
				o.Result = res
			}
			out = append(out, o)
		}
	}
	slices.SortStableFunc(out, func(a, b CrawlOutcome) int { return strings.Compare(a.Server, b.Server) })
	return out, nil
}
