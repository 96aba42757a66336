package pkgid

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

// npmDist is the dist member of an npm version document.
type npmDist struct {
	Integrity string `json:"integrity"`
	Shasum    string `json:"shasum"`
}

// integrity is dist.integrity, or, for versions published before npm recorded one, the
// sha1 shasum written as an SRI string, as npm's own lockfile does.
func (d npmDist) integrity() string {
	if d.Integrity != "" {
		return d.Integrity
	}
	if raw, err := hex.DecodeString(d.Shasum); err == nil && len(raw) == 20 {
		return "sha1-" + base64.StdEncoding.EncodeToString(raw)
	}
	return ""
}

// resolveNPM asks the npm registry's API: GET /NAME/VERSION for an exact version, else the
// abbreviated packument GET /NAME (dist-tags and every version's dist) to resolve a
// dist-tag or range as npm does: a range takes dist-tags.latest when it satisfies it, else
// the highest version that does.
func (r *Resolver) resolveNPM(ctx context.Context, ref Ref) (lockfile.Package, error) {
	reg := r.cfg.NPMRegistry
	what := "npm registry " + reg
	p := lockfile.Package{Type: lockfile.PackageNPM, Name: ref.Name}
	name := url.PathEscape(ref.Name) // @scope%2Fname, as npm sends it
	if ref.Exact != "" {
		a, err := r.do(ctx, http.MethodGet, joinURL(reg, name, url.PathEscape(ref.Exact)), http.Header{"Accept": {"application/json"}}, r.cfg.MaxBody, what)
		if err != nil {
			return p, err
		}
		if a.status == http.StatusNotFound {
			return p, fmt.Errorf("%s: %w: no version %s of %s", what, ErrNotFound, ref.Exact, ref.Name)
		}
		if a.status != http.StatusOK {
			return p, statusError(what, a.status)
		}
		var doc struct {
			Version string  `json:"version"`
			Dist    npmDist `json:"dist"`
		}
		if err := json.Unmarshal(a.body, &doc); err != nil {
			return p, fmt.Errorf("%s: %w: %s@%s is not a version document: %v", what, ErrInvalid, ref.Name, ref.Exact, err)
		}
		if v, ok := parseVersion(doc.Version); !ok || v.String() != ref.Exact {
			return p, fmt.Errorf("%s: %w: asked for %s@%s, it answered version %q", what, ErrInvalid, ref.Name, ref.Exact, doc.Version)
		}
		p.Version, p.Integrity = ref.Exact, doc.Dist.integrity()
		if p.Integrity == "" {
			return p, fmt.Errorf("%s: %w: %s@%s has no dist.integrity", what, ErrInvalid, ref.Name, ref.Exact)
		}
		return p, nil
	}
	a, err := r.do(ctx, http.MethodGet, joinURL(reg, name),
		http.Header{"Accept": {"application/vnd.npm.install-v1+json; q=1.0, application/json; q=0.8"}}, r.cfg.MaxBody, what)
	if err != nil {
		return p, err
	}
	if a.status == http.StatusNotFound {
		return p, fmt.Errorf("%s: %w: no package %s", what, ErrNotFound, ref.Name)
	}
	if a.status != http.StatusOK {
		return p, statusError(what, a.status)
	}
	var doc struct {
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Dist npmDist `json:"dist"`
		} `json:"versions"`
	}
	if err := json.Unmarshal(a.body, &doc); err != nil {
		return p, fmt.Errorf("%s: %w: %s is not a packument: %v", what, ErrInvalid, ref.Name, err)
	}
	var pick string
	rng, isRange := parseRange(ref.Spec)
	switch {
	case ref.Spec == "" || !isRange:
		tag := ref.Spec
		if tag == "" {
			tag = "latest"
		}
		pick = doc.DistTags[tag]
		if pick == "" {
			return p, fmt.Errorf("%s: %w: %s has no dist-tag %q", what, ErrNotFound, ref.Name, tag)
		}
	default:
		if v, ok := parseVersion(doc.DistTags["latest"]); ok && rng.satisfies(v) {
			pick = doc.DistTags["latest"]
			break
		}
		var best version
		for s := range doc.Versions {
			v, ok := parseVersion(s)
			if ok && rng.satisfies(v) && (pick == "" || compare(v, best) > 0) {
				pick, best = s, v
			}
		}
		if pick == "" {
			return p, fmt.Errorf("%s: %w: no version of %s satisfies %s", what, ErrNotFound, ref.Name, ref.Spec)
		}
	}
	v, ok := doc.Versions[pick]
	if !ok {
		return p, fmt.Errorf("%s: %w: %s@%s is named but not listed", what, ErrInvalid, ref.Name, pick)
	}
	p.Version, p.Integrity = pick, v.Dist.integrity()
	if p.Integrity == "" {
		return p, fmt.Errorf("%s: %w: %s@%s has no dist.integrity", what, ErrInvalid, ref.Name, pick)
	}
	return p, nil
}
