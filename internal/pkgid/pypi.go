package pkgid

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/lockfile"
)

// pypiFile is one entry of "urls" (or of a "releases" list) in PyPI's JSON API.
type pypiFile struct {
	Filename string `json:"filename"`
	Digests  struct {
		SHA256 string `json:"sha256"`
	} `json:"digests"`
	Yanked bool `json:"yanked"`
}

// resolvePyPI asks a PyPI-compatible index's JSON API
// (https://docs.pypi.org/api/json/): GET /pypi/NAME/VERSION/json for an exact version, else
// GET /pypi/NAME/json, whose info.version is the latest release; a specifier takes it when
// it satisfies it, else the highest release that does. The version is pinned by the sha256
// of every file it has (wheels and sdist).
func (r *Resolver) resolvePyPI(ctx context.Context, ref Ref) (lockfile.Package, error) {
	idx := r.cfg.PyPIIndex
	what := "PyPI index " + idx
	p := lockfile.Package{Type: lockfile.PackagePyPI, Name: ref.Name}
	elems := []string{"pypi", url.PathEscape(ref.Name)}
	if ref.Exact != "" {
		elems = append(elems, url.PathEscape(ref.Exact))
	}
	a, err := r.do(ctx, http.MethodGet, joinURL(idx, append(elems, "json")...), http.Header{"Accept": {"application/json"}}, r.cfg.MaxBody, what)
	if err != nil {
		return p, err
	}
	if a.status == http.StatusNotFound {
		if ref.Exact != "" {
			return p, fmt.Errorf("%s: %w: no version %s of %s", what, ErrNotFound, ref.Exact, ref.Name)
		}
		return p, fmt.Errorf("%s: %w: no project %s", what, ErrNotFound, ref.Name)
	}
	if a.status != http.StatusOK {
		return p, statusError(what, a.status)
	}
	var doc struct {
		Info struct {
			Version string `json:"version"`
		} `json:"info"`
		URLs     []pypiFile            `json:"urls"`
		Releases map[string][]pypiFile `json:"releases"`
	}
	if err := json.Unmarshal(a.body, &doc); err != nil || doc.Info.Version == "" {
		return p, fmt.Errorf("%s: %w: %s is not a project document (info.version missing)", what, ErrInvalid, ref.Name)
	}
	files := doc.URLs
	p.Version = doc.Info.Version
	if ref.Exact == "" && ref.Spec != "" && ref.Spec != "@latest" {
		spec, err := parsePySpec(ref.Spec)
		if err != nil {
			return p, fmt.Errorf("%s: %w", ref.Name, err)
		}
		if !spec.satisfies(p.Version) {
			best, bestFiles := "", []pypiFile(nil)
			for v, fs := range doc.Releases {
				if spec.satisfies(v) && !allYanked(fs) && (best == "" || pyCompare(pyRelease(v), pyRelease(best)) > 0) {
					best, bestFiles = v, fs
				}
			}
			if best == "" {
				return p, fmt.Errorf("%s: %w: no release of %s satisfies %s", what, ErrNotFound, ref.Name, ref.Spec)
			}
			p.Version, files = best, bestFiles
		}
	}
	for _, f := range files {
		p.Files = append(p.Files, lockfile.PackageFile{Filename: f.Filename, SHA256: f.Digests.SHA256})
	}
	if len(p.Files) == 0 {
		return p, fmt.Errorf("%s: %w: %s %s has no files to pin", what, ErrInvalid, ref.Name, p.Version)
	}
	return p, nil
}

func allYanked(fs []pypiFile) bool {
	for _, f := range fs {
		if !f.Yanked {
			return false
		}
	}
	return true
}

// pySpec is a PEP 440 version specifier read for release versions only: clauses of ==,
// !=, <, <=, >, >=, ~= (and ===) over dotted release numbers, == and != with a trailing .*.
type pySpec []pyClauseT

type pyClauseT struct {
	op       string
	v        []int
	wildcard bool
	raw      string
}

func parsePySpec(s string) (pySpec, error) {
	var out pySpec
	for _, c := range strings.Split(s, ",") {
		m := pyClause.FindStringSubmatch(c)
		if m == nil {
			return nil, fmt.Errorf("%w: %q is not a version specifier", ErrUnsupported, s)
		}
		cl := pyClauseT{op: m[1], raw: m[2]}
		v := m[2]
		if strings.HasSuffix(v, ".*") && (cl.op == "==" || cl.op == "!=") {
			cl.wildcard, v = true, strings.TrimSuffix(v, ".*")
		}
		if cl.op != "===" {
			if !pyReleaseNum.MatchString(v) {
				return nil, fmt.Errorf("%w: %q names a pre-, post-, dev- or local version; agentgate reads ranges of release numbers only: pin it with ==", ErrUnsupported, s)
			}
			cl.v = pyRelease(v)
			if cl.op == "~=" && len(cl.v) < 2 {
				return nil, fmt.Errorf("%w: %q: ~= needs at least two release numbers", ErrUnsupported, s)
			}
		}
		out = append(out, cl)
	}
	return out, nil
}

// pyRelease reads 1.2.3 as [1 2 3]; nil for anything else.
func pyRelease(s string) []int {
	if !pyReleaseNum.MatchString(s) {
		return nil
	}
	var out []int
	for _, p := range strings.Split(s, ".") {
		n, err := strconv.Atoi(p)
		if err != nil {
			return nil
		}
		out = append(out, n)
	}
	return out
}

// pyCompare compares release numbers, the shorter padded with zeros (1.0 == 1.0.0).
func pyCompare(a, b []int) int {
	for i := 0; i < len(a) || i < len(b); i++ {
		x, y := 0, 0
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// satisfies reports whether the release version v is in s; any other version (1.0rc1,
// 1.0.post1) is not picked.
func (s pySpec) satisfies(v string) bool {
	rv := pyRelease(v)
	for _, c := range s {
		if c.op == "===" {
			if v != c.raw {
				return false
			}
			continue
		}
		if rv == nil {
			return false
		}
		n := pyCompare(rv, c.v)
		ok := false
		switch c.op {
		case "==", "!=":
			eq := n == 0
			if c.wildcard {
				eq = len(rv) >= len(c.v) && pyCompare(rv[:len(c.v)], c.v) == 0
			}
			ok = eq == (c.op == "==")
		case "<":
			ok = n < 0
		case "<=":
			ok = n <= 0
		case ">":
			ok = n > 0
		case ">=":
			ok = n >= 0
		case "~=":
			prefix := c.v[:len(c.v)-1]
			ok = n >= 0 && len(rv) >= len(prefix) && pyCompare(rv[:len(prefix)], prefix) == 0
		}
		if !ok {
			return false
		}
	}
	return true
}
