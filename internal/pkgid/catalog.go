package pkgid

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// A toolwarrant catalog server's package pin (warrant.PackagePin): the spec an operator
// gives `toolwarrant server pin`, resolved to its identity, and the crawl's check of it.
//
// Specs:
//
//	npm:NAME@VERSION        an npm package at an exact version
//	pypi:NAME==VERSION      a PyPI project at an exact version
//	oci:IMAGE[:TAG][@DIGEST] an image (a tag is resolved to its digest)
//	tls                     the TLS key the server's https URL answers with
//
// A spec that floats (npm:NAME@latest, a range, no version, an image tag without a digest
// when pinning with ExactOnly) is resolved to what it names now and pinned as that exact
// version: the pin says what is deployed, and the next deployment is pinned again.

// SpecTLS is the spec of a server's TLS key.
const SpecTLS = "tls"

// ParseSpec reads a pin spec. The error says what the forms are.
func ParseSpec(spec string) (Ref, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	if spec == SpecTLS {
		return Ref{Type: lockfile.PackageRemote}, nil
	}
	bad := func(why string) (Ref, error) {
		return Ref{}, fmt.Errorf("%w: package spec %q: %s (use npm:NAME@VERSION, pypi:NAME==VERSION, oci:IMAGE[:TAG][@sha256:DIGEST] or tls)", ErrUnsupported, spec, why)
	}
	if rest == "" || strings.HasPrefix(rest, "-") || strings.ContainsAny(rest, " \t\r\n") {
		return bad("it names no package")
	}
	var ref Ref
	var ok bool
	var err error
	switch kind {
	case "npm":
		ref, ok, err = Parse("npx", []string{"-y", rest})
	case "pypi":
		ref, ok, err = Parse("uvx", []string{rest})
	case "oci":
		ref, ok, err = Parse("docker", []string{"run", rest})
	default:
		return bad("unknown kind " + kind)
	}
	if err != nil {
		return Ref{}, err
	}
	if !ok {
		return bad("it names no package")
	}
	return ref, nil
}

// Pin resolves spec for a catalog server at serverURL: the identity to record, and the
// spec as it will be checked (a floating npm or PyPI spec becomes the exact version it
// resolved to). dial makes the TLS connection of a tls spec (nil: a plain dialer).
func (r *Resolver) Pin(ctx context.Context, spec, serverURL string, dial DialFunc) (canonical string, identity json.RawMessage, err error) {
	ref, err := ParseSpec(spec)
	if err != nil {
		return "", nil, err
	}
	var p lockfile.Package
	if ref.Type == lockfile.PackageRemote {
		u, err := ParseURL(serverURL)
		if err != nil {
			return "", nil, err
		}
		spki, err := r.SPKIVia(ctx, serverURL, dial)
		if err != nil {
			return "", nil, err
		}
		p = u.Package()
		p.SPKI = spki
		spec = SpecTLS
	} else {
		if p, err = r.Resolve(ctx, ref); err != nil {
			return "", nil, err
		}
		switch ref.Type {
		case lockfile.PackageNPM:
			spec = "npm:" + p.Name + "@" + p.Version
		case lockfile.PackagePyPI:
			spec = "pypi:" + p.Name + "==" + p.Version
		}
	}
	b, err := json.Marshal(p)
	return spec, b, err
}

// Checker is the crawl's warrant.PackageChecker: it resolves a pinned server's package
// again and grades how it differs from the pin, as agentgate ci grades a locked package.
type Checker struct {
	Resolver *Resolver
	// Dial returns the dialer for a server's TLS key check (nil, or a nil result: a plain
	// dialer): the crawler's address policy for that server.
	Dial func(warrant.Server) DialFunc
}

// CheckPackage implements warrant.PackageChecker. A difference graded WARNING or above is
// a *warrant.PackageDriftError; an INFO one (a tag that moved to the same content) is not.
// A registry that cannot say is an error: the crawl cannot decide, so it refuses.
func (c Checker) CheckPackage(ctx context.Context, srv warrant.Server, pin warrant.PackagePin) error {
	var locked lockfile.Package
	if err := json.Unmarshal(pin.Identity, &locked); err != nil || locked.Validate() != nil {
		return fmt.Errorf("server %q: its package pin %d cannot be read; pin it again with 'toolwarrant server pin %s'", srv.Name, pin.Seq, srv.Name)
	}
	ref, err := ParseSpec(pin.Spec)
	if err != nil {
		return fmt.Errorf("server %q: package pin %d: %w", srv.Name, pin.Seq, err)
	}
	var live lockfile.Package
	switch {
	case ref.Type == lockfile.PackageRemote:
		var dial DialFunc
		if c.Dial != nil {
			dial = c.Dial(srv)
		}
		spki, err := c.Resolver.SPKIVia(ctx, srv.URL, dial)
		if err != nil {
			return fmt.Errorf("server %q: its TLS key cannot be checked against the pin: %w", srv.Name, err)
		}
		live = locked
		live.URL, live.SPKI = locked.URL, spki
		if u, err := ParseURL(srv.URL); err == nil {
			live.URL = u.URL
		}
	default:
		if locked.Version != "" {
			ref = ref.WithVersion(locked.Version)
		}
		if live, err = c.Resolver.Resolve(ctx, ref); err != nil {
			if errors.Is(err, ErrNotFound) {
				return &warrant.PackageDriftError{Server: srv.Name, Severity: warrant.Critical, Rule: lockfile.RulePackageIntegrity,
					Detail: fmt.Sprintf("%s is no longer in its registry: %v", pin.Spec, err)}
			}
			return fmt.Errorf("server %q: its package %s cannot be checked against the pin: %w", srv.Name, pin.Spec, err)
		}
	}
	d := lockfile.ComparePackage(locked, &live, lockfile.PackageCompare{ContentPinned: ref.ContentPinned(), Resolved: true})
	if d == nil || d.Grade < warrant.Warning || len(d.Changes) == 0 {
		return nil
	}
	ch := d.Changes[0]
	for _, c := range d.Changes {
		if c.Severity > ch.Severity {
			ch = c
		}
	}
	return &warrant.PackageDriftError{Server: srv.Name, Severity: d.Grade, Rule: ch.Rule,
		Detail: fmt.Sprintf("%s at %s: %s is now %s", pin.Spec, ch.Pointer, short(ch.Old), short(ch.New))}
}

// short shows a value of a change, cut to a readable length.
func short(v any) string {
	s := fmt.Sprint(v)
	if b, err := json.Marshal(v); err == nil {
		s = string(b)
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}
