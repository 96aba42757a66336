package lockfile

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Package types: what a server runs from.
const (
	// PackageNPM is an npm registry package, run by npx, npm exec, pnpm dlx or bunx.
	PackageNPM = "npm"
	// PackagePyPI is a Python package index project, run by uvx or pipx run.
	PackagePyPI = "pypi"
	// PackageOCI is a container image, run by docker run or podman run.
	PackageOCI = "oci"
	// PackageRemote is a server spoken to over HTTP at a URL.
	PackageRemote = "remote"
)

// Package is what a server is, beside what it says: the artifact it runs from, pinned by
// content. It is optional per server in a version 2 lockfile (docs/agentgate.md, "Package
// identity"); its JSON form is the lockfile's and that of diff --json.
type Package struct {
	// Type is PackageNPM, PackagePyPI, PackageOCI or PackageRemote.
	Type string `json:"type"`
	// Name is the npm package name (@scope/name), the PyPI project name normalized as PEP 503
	// says, or the OCI repository with its registry (docker.io/library/alpine); "" for a
	// remote server.
	Name string `json:"name,omitempty"`
	// Version is the exact npm or PyPI version.
	Version string `json:"version,omitempty"`
	// Tag is an OCI image's tag as the config names it ("" when it names a digest only).
	Tag string `json:"tag,omitempty"`
	// Integrity is npm's dist.integrity, a Subresource Integrity string (sha512-<base64>).
	Integrity string `json:"integrity,omitempty"`
	// Digest is an OCI image's manifest (or index) digest, "sha256:" and 64 hex digits.
	Digest string `json:"digest,omitempty"`
	// Files are a PyPI version's files (wheels and sdists), sorted by filename.
	Files []PackageFile `json:"files,omitempty"`
	// URL is a remote server's URL without user info, query or fragment, which often carry
	// credentials.
	URL string `json:"url,omitempty"`
	// SPKI is "sha256:" and the hex SHA-256 of the remote server's TLS leaf certificate's
	// SubjectPublicKeyInfo; "" when it is not pinned.
	SPKI string `json:"spki,omitempty"`
}

// PackageFile is one file of a PyPI version.
type PackageFile struct {
	Filename string `json:"filename"`
	SHA256   string `json:"sha256"`
}

// Package rules: how a server's package identity drifts (docs/drift-grading.md, "Package
// identity"). They grade a server's package as the warrant rules grade its tools.
const (
	// RulePackageIntegrity: the same package at the same version (an npm or PyPI version, an
	// image tag) now has other content: another dist.integrity, other file hashes, another
	// manifest digest, another TLS key. CRITICAL: what a re-published or tampered package
	// looks like.
	RulePackageIntegrity warrant.Rule = "package-integrity-changed"
	// RulePackageVersion: the config now asks for another version than the locked one (an
	// exact version or digest edited, or a floating spec that now resolves to another
	// version). WARNING: new code runs; re-lock after review.
	RulePackageVersion warrant.Rule = "package-version-changed"
	// RulePackageChanged: the server now runs from another package (type, name or URL), or
	// no longer from a package. WARNING: re-lock after review.
	RulePackageChanged warrant.Rule = "package-changed"
	// RulePackageFloating: the config names no exact version (npx pkg@latest, no version, a
	// range, an image tag without a digest). A warning with the pinned command; it never fails
	// ci by itself: what the spec resolves to is checked.
	RulePackageFloating warrant.Rule = "package-floating"
)

// PackageRules are the package rules, with their severity and summary, for reports (SARIF).
var PackageRules = []warrant.RuleInfo{
	{Rule: RulePackageIntegrity, Severity: warrant.Critical, Summary: "the same package version now has other content (integrity, file hashes, image digest or TLS key)"},
	{Rule: RulePackageVersion, Severity: warrant.Warning, Summary: "the config now runs another version of the locked package"},
	{Rule: RulePackageChanged, Severity: warrant.Warning, Summary: "the server now runs from another package, or from none"},
	{Rule: RulePackageFloating, Severity: warrant.Warning, Summary: "the config names no exact version: it runs whatever the registry serves"},
}

// String names p as a person would: npm "@scope/name@1.2.3", pypi "name==1.2.3", oci
// "docker.io/x/y:tag@sha256:…", remote "https://…".
func (p Package) String() string {
	switch p.Type {
	case PackageNPM:
		return p.Name + "@" + p.Version
	case PackagePyPI:
		return p.Name + "==" + p.Version
	case PackageOCI:
		s := p.Name
		if p.Tag != "" {
			s += ":" + p.Tag
		}
		if p.Digest != "" {
			s += "@" + p.Digest
		}
		return s
	}
	return p.URL
}

// Equal reports whether p and q pin the same thing.
func (p Package) Equal(q Package) bool {
	if p.Type != q.Type || p.Name != q.Name || p.Version != q.Version || p.Tag != q.Tag || p.Integrity != q.Integrity ||
		p.Digest != q.Digest || p.URL != q.URL || p.SPKI != q.SPKI || len(p.Files) != len(q.Files) {
		return false
	}
	for i := range p.Files {
		if p.Files[i] != q.Files[i] {
			return false
		}
	}
	return true
}

func equalPackages(p, q *Package) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.Equal(*q)
}

// Validate checks p as [ParseV2] does: a known type, and the members that type needs, well
// formed. Files are sorted (and unique) afterwards.
func (p *Package) Validate() error {
	bad := func(field, msg string) error { return &packageError{field: field, msg: msg} }
	switch p.Type {
	case PackageNPM, PackagePyPI:
		if !validPackageName(p.Name) {
			return bad("name", "is missing or not a package name")
		}
		if !validVersion(p.Version) {
			return bad("version", "is missing or not a version")
		}
		if p.Type == PackageNPM && !ValidIntegrity(p.Integrity) {
			return bad("integrity", "must be a Subresource Integrity string such as sha512-<base64>")
		}
		if p.Type == PackagePyPI {
			if len(p.Files) == 0 {
				return bad("files", "is empty; a version is pinned by the hashes of its files")
			}
			for i, f := range p.Files {
				if f.Filename == "" || strings.ContainsAny(f.Filename, "/\\") || hasControl(f.Filename) {
					return bad(fmt.Sprintf("files[%d].filename", i), "is missing or not a file name")
				}
				if !IsHash(f.SHA256) {
					return bad(fmt.Sprintf("files[%d].sha256", i), "must be 64 lowercase hex digits")
				}
			}
			sort.SliceStable(p.Files, func(i, j int) bool { return p.Files[i].Filename < p.Files[j].Filename })
			for i := 1; i < len(p.Files); i++ {
				if p.Files[i].Filename == p.Files[i-1].Filename {
					return bad("files", fmt.Sprintf("has two entries for %q", p.Files[i].Filename))
				}
			}
		}
		if p.Tag != "" || p.Digest != "" || p.URL != "" || p.SPKI != "" || (p.Type == PackageNPM && len(p.Files) > 0) || (p.Type == PackagePyPI && p.Integrity != "") {
			return bad("", "has members of another package type")
		}
	case PackageOCI:
		if !validPackageName(p.Name) {
			return bad("name", "is missing or not an image repository")
		}
		if p.Tag != "" && !validVersion(p.Tag) {
			return bad("tag", "is not an image tag")
		}
		if !ValidDigest(p.Digest) {
			return bad("digest", "must be \"sha256:\" and 64 lowercase hex digits")
		}
		if p.Version != "" || p.Integrity != "" || len(p.Files) > 0 || p.URL != "" || p.SPKI != "" {
			return bad("", "has members of another package type")
		}
	case PackageRemote:
		if p.URL == "" || hasControl(p.URL) || !(strings.HasPrefix(p.URL, "https://") || strings.HasPrefix(p.URL, "http://")) ||
			strings.ContainsAny(p.URL, "?#") {
			return bad("url", "must be an http(s) URL without query or fragment")
		}
		if p.SPKI != "" && !ValidDigest(p.SPKI) {
			return bad("spki", "must be \"sha256:\" and 64 lowercase hex digits")
		}
		if p.Name != "" || p.Version != "" || p.Tag != "" || p.Integrity != "" || p.Digest != "" || len(p.Files) > 0 {
			return bad("", "has members of another package type")
		}
	default:
		return bad("type", fmt.Sprintf("%q is not one of npm, pypi, oci, remote", p.Type))
	}
	return nil
}

// packageError is what Validate refuses: field (a member, "" for the object) and why.
type packageError struct{ field, msg string }

func (e *packageError) Error() string {
	if e.field == "" {
		return "invalid package: " + e.msg
	}
	return "invalid package: " + e.field + " " + e.msg
}

func (e *packageError) Unwrap() error { return ErrInvalid }

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return true
		}
	}
	return false
}

func validPackageName(s string) bool {
	return s != "" && len(s) <= 512 && !hasControl(s) && !strings.ContainsAny(s, " \t")
}

func validVersion(s string) bool {
	return s != "" && len(s) <= 256 && !hasControl(s) && !strings.ContainsAny(s, " \t")
}

// ValidDigest reports whether s is "sha256:" and 64 lowercase hex digits.
func ValidDigest(s string) bool {
	return strings.HasPrefix(s, "sha256:") && IsHash(strings.TrimPrefix(s, "sha256:"))
}

// ValidIntegrity reports whether s is one Subresource Integrity hash as npm writes them:
// sha512, sha384, sha256 or sha1, a dash, and the standard base64 of a digest of that size.
func ValidIntegrity(s string) bool {
	alg, b64, ok := strings.Cut(s, "-")
	if !ok {
		return false
	}
	size := map[string]int{"sha512": 64, "sha384": 48, "sha256": 32, "sha1": 20}[alg]
	if size == 0 {
		return false
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	return err == nil && len(raw) == size
}

// PackageDiff is how a server's package differs from the locked one.
type PackageDiff struct {
	// Grade is the most severe of Changes.
	Grade warrant.Severity `json:"grade"`
	// Changes are the graded changes (RulePackageIntegrity, RulePackageVersion,
	// RulePackageChanged), each with a JSON pointer into the package object and the old and
	// new values.
	Changes []warrant.Change `json:"changes"`
	// Locked is the package in the lockfile; Live what the config runs now, as far as it is
	// known (nil when it runs from no package).
	Locked *Package `json:"locked"`
	Live   *Package `json:"live"`
	// NotStarted is true when ci did not start the server because its package failed the
	// check (its surface was not listed: the lockfile's is shown instead).
	NotStarted bool `json:"notStarted,omitempty"`
}

// PackageCompare says what is known about the live package.
type PackageCompare struct {
	// ContentPinned is true when the config itself names the content (an OCI digest): a
	// different one is then another version, not changed content.
	ContentPinned bool
	// Resolved is true when live's content (integrity, files, digest, SPKI) was read from
	// the registry or the server just now; false (offline) compares names and versions only.
	Resolved bool
}

// ComparePackage grades how live (nil: the server runs from no package now) differs from
// locked; nil when it does not. An empty live Version (a floating spec checked offline) is
// unknown, not different.
func ComparePackage(locked Package, live *Package, opt PackageCompare) *PackageDiff {
	d := &PackageDiff{Locked: &locked, Live: live}
	add := func(rule warrant.Rule, sev warrant.Severity, pointer, old, new, reason string) {
		c := warrant.Change{Rule: rule, Severity: sev, Kind: warrant.Changed, Pointer: pointer, Reason: reason}
		if old != "" {
			c.Old, _ = json.Marshal(old)
		}
		if new != "" {
			c.New, _ = json.Marshal(new)
		}
		d.Changes = append(d.Changes, c)
		d.Grade = max(d.Grade, sev)
	}
	switch {
	case live == nil:
		add(RulePackageChanged, warrant.Warning, "", locked.String(), "", "the server no longer runs from the locked package (or from any package agentgate can pin): review the config change, then run 'agentgate lock'")
		return d
	case live.Type != locked.Type:
		add(RulePackageChanged, warrant.Warning, "/type", locked.Type, live.Type, "the server now runs from another kind of package: review the config change, then run 'agentgate lock'")
		return d
	case live.Name != locked.Name:
		add(RulePackageChanged, warrant.Warning, "/name", locked.Name, live.Name, "the server now runs another package: review it, then run 'agentgate lock'")
		return d
	case live.URL != locked.URL:
		add(RulePackageChanged, warrant.Warning, "/url", locked.URL, live.URL, "the server is now at another URL: review the config change, then run 'agentgate lock'")
		return d
	}
	if opt.ContentPinned {
		if live.Digest != locked.Digest {
			add(RulePackageVersion, warrant.Warning, "/digest", locked.Digest, live.Digest, "the config now pins another image: review it, then run 'agentgate lock'")
		}
		return finish(d)
	}
	lv, vv, ptr := locked.Version, live.Version, "/version"
	if locked.Type == PackageOCI {
		lv, vv, ptr = locked.Tag, live.Tag, "/tag"
	}
	if vv != "" && vv != lv {
		add(RulePackageVersion, warrant.Warning, ptr, lv, vv, "the config now runs another version than the locked one: review it, then run 'agentgate lock'")
		return d
	}
	if !opt.Resolved {
		return finish(d)
	}
	const tampered = " for the same version: the registry now serves other content under it (a re-published or tampered package); do not run it, find out why, and re-lock only once you trust it"
	switch locked.Type {
	case PackageNPM:
		if live.Integrity != locked.Integrity {
			add(RulePackageIntegrity, warrant.Critical, "/integrity", locked.Integrity, live.Integrity, "dist.integrity changed"+tampered)
		}
	case PackagePyPI:
		lf, vf := map[string]string{}, map[string]string{}
		for _, f := range locked.Files {
			lf[f.Filename] = f.SHA256
		}
		for _, f := range live.Files {
			vf[f.Filename] = f.SHA256
		}
		for i, f := range locked.Files {
			if h, ok := vf[f.Filename]; !ok {
				add(RulePackageIntegrity, warrant.Critical, fmt.Sprintf("/files/%d", i), f.Filename+" "+f.SHA256, "", "a locked file is no longer served"+tampered)
			} else if h != f.SHA256 {
				add(RulePackageIntegrity, warrant.Critical, fmt.Sprintf("/files/%d/sha256", i), f.SHA256, h, "the file "+f.Filename+" has another sha256"+tampered)
			}
		}
		for _, f := range live.Files {
			if _, ok := lf[f.Filename]; !ok {
				add(RulePackageIntegrity, warrant.Critical, "/files", "", f.Filename+" "+f.SHA256, "a file the locked version did not have is now served (an installer may pick it)"+tampered)
			}
		}
	case PackageOCI:
		if live.Digest != locked.Digest && (locked.Tag == "" || locked.Tag == "latest") {
			// latest moves by design: new code, not changed content.
			add(RulePackageVersion, warrant.Warning, "/digest", locked.Digest, live.Digest, "the tag latest now names another image: review it, then run 'agentgate lock' (pin the image by digest to stop it from moving)")
		} else if live.Digest != locked.Digest {
			add(RulePackageIntegrity, warrant.Critical, "/digest", locked.Digest, live.Digest, "the tag "+locked.Tag+" now names another image"+tampered+" (pin the image by digest to stop tags from moving)")
		}
	case PackageRemote:
		if locked.SPKI != "" && live.SPKI != "" && live.SPKI != locked.SPKI {
			add(RulePackageIntegrity, warrant.Critical, "/spki", locked.SPKI, live.SPKI, "the server's TLS key changed: another server may be answering at this URL (or its key was rotated); check, then run 'agentgate lock --pin-tls'")
		}
	}
	return finish(d)
}

func finish(d *PackageDiff) *PackageDiff {
	if len(d.Changes) == 0 {
		return nil
	}
	return d
}

// PackageWarning is advice about a server's package that does not fail ci by itself: a
// floating spec (RulePackageFloating) or a package that cannot be pinned.
type PackageWarning struct {
	Server string `json:"server"`
	// Rule is RulePackageFloating.
	Rule     warrant.Rule     `json:"rule"`
	Severity warrant.Severity `json:"severity"`
	// Message says what floats and what to do, on one line.
	Message string `json:"message"`
	// Pinned is the command to run instead ("" when it is not known).
	Pinned string `json:"pinned,omitempty"`
}

// pkg writes a server's "package" member, one field per line, at the depth of "profiles";
// PyPI files one per line.
func (w *writer) pkg(p Package) {
	w.raw("\n      \"package\": {")
	fields := [][2]string{{"type", p.Type}}
	switch p.Type {
	case PackageNPM:
		fields = append(fields, [2]string{"name", p.Name}, [2]string{"version", p.Version}, [2]string{"integrity", p.Integrity})
	case PackagePyPI:
		fields = append(fields, [2]string{"name", p.Name}, [2]string{"version", p.Version})
	case PackageOCI:
		fields = append(fields, [2]string{"name", p.Name})
		if p.Tag != "" {
			fields = append(fields, [2]string{"tag", p.Tag})
		}
		fields = append(fields, [2]string{"digest", p.Digest})
	case PackageRemote:
		fields = append(fields, [2]string{"url", p.URL})
		if p.SPKI != "" {
			fields = append(fields, [2]string{"spki", p.SPKI})
		}
	}
	for i, f := range fields {
		w.sep(i, "\n        ")
		w.str(f[0])
		w.raw(": ")
		w.str(f[1])
	}
	if p.Type == PackagePyPI {
		w.raw(",\n        \"files\": [")
		for i, f := range p.Files {
			w.sep(i, "\n          ")
			w.raw("{\"filename\": ")
			w.str(f.Filename)
			w.raw(", \"sha256\": ")
			w.str(f.SHA256)
			w.raw("}")
		}
		if len(p.Files) > 0 {
			w.raw("\n        ")
		}
		w.raw("]")
	}
	w.raw("\n      }")
}
