package warrant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// A server's package pin: what an operator says the server at a URL runs from — an npm or
// PyPI version, an image, or the TLS key the URL answers with — and what that resolved to
// by content when it was pinned (npm's dist.integrity, the files' sha256, the manifest
// digest, the SubjectPublicKeyInfo's SHA-256). The crawl checks it before it lists the
// server (CrawlRequest.Packages), so a package re-published under the same version, or a
// server that now answers with another key, is refused at the crawl instead of being
// listed as if nothing happened (docs/toolwarrant.md, "Package identity").
//
// The domain keeps the identity as the JSON object the resolver wrote (the lockfile's
// package form, internal/lockfile.Package): it stores, audits and shows it, and leaves
// reading and comparing it to the adapter that resolves packages.

// EventPackagePinned is the audit entry of a pin: the server, the pin's number, the spec
// and the identity.
const EventPackagePinned = "package_pinned"

// Bounds of a pin.
const (
	MaxPackageSpec     = 512
	MaxPackageIdentity = 64 << 10
)

// PackagePin is one pin of a server's package. Pins are numbered per server from 1 and
// never updated or deleted; the newest is the server's (Server.Package).
type PackagePin struct {
	Server string `json:"server"`
	// Seq numbers the server's pins from 1: the check-and-set counter of PinPackage.
	Seq int64 `json:"seq"`
	// Spec is what the operator named, as given: "npm:@scope/name@1.2.3",
	// "pypi:name==1.0", "oci:ghcr.io/org/image:tag", "tls".
	Spec string `json:"spec"`
	// Identity is what Spec resolved to when it was pinned: one JSON object, compact.
	Identity json.RawMessage `json:"identity"`
	// PinnedAt and PinnedBy say when and by whom.
	PinnedAt time.Time `json:"pinnedAt"`
	PinnedBy string    `json:"pinnedBy"`
}

// Validate checks a pin's shape: a valid server name, a sequence number from 1, a spec of
// printable UTF-8 within MaxPackageSpec, an identity that is one JSON object within
// MaxPackageIdentity.
func (p PackagePin) Validate() error {
	if err := ValidateServerName(p.Server); err != nil {
		return err
	}
	if p.Seq < 1 {
		return fmt.Errorf("%w: server %q: package pin number %d (pins are numbered from 1)", ErrInvalid, p.Server, p.Seq)
	}
	if p.Spec == "" || len(p.Spec) > MaxPackageSpec || !utf8.ValidString(p.Spec) || strings.ContainsFunc(p.Spec, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("%w: server %q: package spec must be 1 to %d printable characters", ErrInvalid, p.Server, MaxPackageSpec)
	}
	id := bytes.TrimSpace(p.Identity)
	if len(id) == 0 || len(id) > MaxPackageIdentity || id[0] != '{' || !json.Valid(id) {
		return fmt.Errorf("%w: server %q: package identity must be one JSON object of at most %d bytes", ErrInvalid, p.Server, MaxPackageIdentity)
	}
	return nil
}

// PackageChecker checks a pinned server's package before the crawl lists it: nil when
// what the server runs from is still what was pinned; a *PackageDriftError when it is not;
// any other error when it cannot tell (a registry unreachable), which refuses the crawl
// of that server too, since it cannot be decided.
type PackageChecker interface {
	CheckPackage(ctx context.Context, srv Server, pin PackagePin) error
}

// PackageDriftError says how a pinned server's package differs from its pin.
type PackageDriftError struct {
	Server string
	// Severity and Rule grade the difference as agentgate ci grades a locked package's.
	Severity Severity
	Rule     Rule
	// Detail says what changed, for people ("sha512-AAA… is now sha512-BBB…").
	Detail string
}

func (e *PackageDriftError) Error() string {
	return fmt.Sprintf("server %q: %s %s: %s (what it runs from is not what was pinned; if the change is expected, pin it again with 'toolwarrant server pin %s')",
		e.Server, e.Severity, e.Rule, e.Detail, e.Server)
}

// ErrPackageDrift is matched by every *PackageDriftError (errors.Is).
var ErrPackageDrift = errors.New("package differs from its pin")

// Is makes errors.Is(err, ErrPackageDrift) true.
func (e *PackageDriftError) Is(target error) bool { return target == ErrPackageDrift }

// PinPackage records a new pin of a server's package: pin.Server, Spec and Identity are
// the caller's; the number, time and identity of who pinned are the service's. Pinning
// what the newest pin already says (the same spec and identity) changes nothing and
// returns false. ErrNotFound for an unknown server, ErrInvalid for a bad pin.
func (s *Service) PinPackage(ctx context.Context, pin PackagePin) (PackagePin, bool, error) {
	var compact bytes.Buffer
	if err := json.Compact(&compact, bytes.TrimSpace(pin.Identity)); err == nil {
		pin.Identity = compact.Bytes()
	}
	for range s.attempts {
		srv, err := s.cat.Server(ctx, pin.Server)
		if err != nil {
			return PackagePin{}, false, err
		}
		pin.Seq, pin.PinnedAt, pin.PinnedBy = 1, s.clock(), s.identity
		if old := srv.Package; old != nil {
			if old.Spec == pin.Spec && bytes.Equal(old.Identity, pin.Identity) {
				return *old, false, nil
			}
			pin.Seq = old.Seq + 1
		}
		if err := pin.Validate(); err != nil {
			return PackagePin{}, false, err
		}
		err = s.auditedN(ctx, "pin package", 1, func() ([]Event, error) {
			return []Event{{Type: EventPackagePinned, Actor: pin.PinnedBy, At: pin.PinnedAt, Body: mustJSON(map[string]any{
				"server": pin.Server, "seq": pin.Seq, "spec": pin.Spec, "identity": pin.Identity})}}, nil
		}, func(a AuditAppend) error { return s.cat.PinPackage(ctx, pin, a) })
		if !errors.Is(err, ErrConflict) {
			return pin, err == nil, err
		}
		if ctx.Err() != nil {
			return PackagePin{}, false, ctx.Err()
		}
	}
	return PackagePin{}, false, fmt.Errorf("pin package of %q: gave up after %d attempts: %w", pin.Server, s.attempts, ErrConflict)
}
