package lockfile

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

const everythingIntegrity = "sha512-5U3OZh8Xq0Li4nA26l6uNvV9/1suMDuWSn+NjLZIhzinhMY6N3A4DCrxVecBGPf2PsNFKTEv5krxGPRwzxc7jQ=="

func samplePackages() map[string]*Package {
	return map[string]*Package{
		"everything": {Type: PackageNPM, Name: "@modelcontextprotocol/server-everything", Version: "2026.8.31", Integrity: everythingIntegrity},
		"fetch": {Type: PackagePyPI, Name: "mcp-server-fetch", Version: "2025.4.7", Files: []PackageFile{
			{Filename: "mcp_server_fetch-2025.4.7-py3-none-any.whl", SHA256: strings.Repeat("a1", 32)},
			{Filename: "mcp_server_fetch-2025.4.7.tar.gz", SHA256: strings.Repeat("b2", 32)},
		}},
		"github":  {Type: PackageOCI, Name: "ghcr.io/github/github-mcp-server", Tag: "v1.0.0", Digest: "sha256:" + strings.Repeat("c3", 32)},
		"weather": {Type: PackageRemote, URL: "https://weather.example.com/mcp", SPKI: "sha256:" + strings.Repeat("d4", 32)},
	}
}

// samplePackageV2 is the version 2 sample with one server per package type, all showing the
// sample surface.
func samplePackageV2(t *testing.T) *LockfileV2 {
	t.Helper()
	lf, _ := sampleV2(t, sampleDefs())
	prof := lf.Servers["weather"].Profiles
	lf.Servers = map[string]ServerV2{}
	for name, p := range samplePackages() {
		lf.Servers[name] = ServerV2{Package: p, Profiles: prof}
	}
	return lf
}

// TestPackageGolden guards the bytes of a version 2 lockfile whose servers pin their
// packages, and that they read back; the sample without packages is still
// sample.v2.lock.golden, byte for byte (TestV2Golden).
func TestPackageGolden(t *testing.T) {
	lf := samplePackageV2(t)
	data, err := lf.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "sample.v2.package.lock.golden", data)
	back, warns, err := ParseV2(data)
	if err != nil || len(warns) != 0 {
		t.Fatalf("ParseV2: %v %v", err, warns)
	}
	if !SameSurfaceV2(lf, back) {
		t.Error("round trip differs")
	}
	for name, want := range samplePackages() {
		if diff := cmp.Diff(want, back.Servers[name].Package); diff != "" {
			t.Errorf("%s package (-want +got):\n%s", name, diff)
		}
	}
	// A package is part of what is locked: another integrity is another lockfile.
	other := samplePackageV2(t)
	other.Servers["everything"].Package.Integrity = "sha512-" + strings.Repeat("A", 86) + "=="
	if SameSurfaceV2(lf, other) {
		t.Error("SameSurfaceV2 ignores the package")
	}
	other.Servers["everything"] = ServerV2{Profiles: other.Servers["everything"].Profiles}
	if SameSurfaceV2(lf, other) {
		t.Error("SameSurfaceV2 ignores a package removed")
	}
}

// Files out of order are read, with a warning, and written back in order.
func TestPackageFilesOrder(t *testing.T) {
	data, _ := samplePackageV2(t).Marshal()
	s := string(data)
	whl := `{"filename": "mcp_server_fetch-2025.4.7-py3-none-any.whl", "sha256": "` + strings.Repeat("a1", 32) + `"}`
	tgz := `{"filename": "mcp_server_fetch-2025.4.7.tar.gz", "sha256": "` + strings.Repeat("b2", 32) + `"}`
	swapped := strings.Replace(strings.Replace(strings.Replace(s, whl, "WHL", 1), tgz, whl, 1), "WHL", tgz, 1)
	lf, warns, err := ParseV2([]byte(swapped))
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) == 0 || !strings.Contains(warns[0].String(), "servers.fetch.package.files: not sorted by filename") {
		t.Errorf("warnings = %v", warns)
	}
	if again, _ := lf.Marshal(); string(again) != s {
		t.Error("not rewritten in order")
	}
}

func TestParsePackageRefuses(t *testing.T) {
	good, err := samplePackageV2(t).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, old, new, err string
	}{
		{"unknown type", `"type": "npm"`, `"type": "cargo"`, `servers.everything.package.type "cargo" is not one of npm, pypi, oci, remote`},
		{"integrity not SRI", everythingIntegrity, "5U3OZh8Xq0", `servers.everything.package.integrity must be a Subresource Integrity string`},
		{"integrity of the wrong size", everythingIntegrity, "sha512-AAAA", `servers.everything.package.integrity must be`},
		{"npm without version", `"version": "2026.8.31",`, ``, `servers.everything.package.version is missing`},
		{"pypi file hash", strings.Repeat("a1", 32), "A1", `servers.fetch.package.files[0].sha256 must be 64 lowercase hex digits`},
		{"pypi file with a path", `"mcp_server_fetch-2025.4.7.tar.gz"`, `"../x.tar.gz"`, `servers.fetch.package.files[1].filename is missing or not a file name`},
		{"oci digest", `"digest": "sha256:c3`, `"digest": "sha512:c3`, `servers.github.package.digest must be "sha256:" and 64`},
		{"remote with a query", `"url": "https://weather.example.com/mcp"`, `"url": "https://weather.example.com/mcp?key=x"`, `servers.weather.package.url must be an http(s) URL without query or fragment`},
		{"remote spki", `"spki": "sha256:d4`, `"spki": "d4`, `servers.weather.package.spki must be`},
		{"not an object", `"package": {
        "type": "npm",`, `"package": "npm", "x": {`, `servers.everything.package must be an object`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(string(good), tc.old, tc.new, 1)
			if bad == string(good) {
				t.Fatalf("edit %q not applied", tc.old)
			}
			_, _, err := ParseV2([]byte(bad))
			if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseV2 = %v, want an error containing %q", err, tc.err)
			}
		})
	}
	// A member of another package type is an unknown field: a warning, as everywhere else.
	_, warns, err := ParseV2([]byte(strings.Replace(string(good), `"type": "npm",`, `"type": "npm", "digest": "x",`, 1)))
	if err != nil || len(warns) == 0 || !strings.Contains(warns[0].String(), "servers.everything.package.digest: unknown field") {
		t.Errorf("ParseV2 = %v %v", err, warns)
	}
}

func TestValidateRefusesMixedMembers(t *testing.T) {
	for _, p := range []Package{
		{Type: PackageNPM, Name: "x", Version: "1.0.0", Integrity: everythingIntegrity, Digest: "sha256:" + strings.Repeat("0", 64)},
		{Type: PackageOCI, Name: "docker.io/library/alpine", Digest: "sha256:" + strings.Repeat("0", 64), Version: "1"},
		{Type: PackageRemote, URL: "https://x.test/mcp", Name: "x"},
		{Type: PackagePyPI, Name: "x", Version: "1", Files: []PackageFile{{"a.whl", strings.Repeat("0", 64)}, {"a.whl", strings.Repeat("1", 64)}}},
	} {
		if err := p.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil", p)
		}
	}
}

func TestComparePackage(t *testing.T) {
	npm := Package{Type: PackageNPM, Name: "pkg", Version: "1.0.0", Integrity: everythingIntegrity}
	other := "sha512-" + strings.Repeat("A", 86) + "=="
	oci := Package{Type: PackageOCI, Name: "docker.io/mcp/fetch", Tag: "1.0", Digest: "sha256:" + strings.Repeat("a", 64)}
	ociB := "sha256:" + strings.Repeat("b", 64)
	pypi := *samplePackages()["fetch"]
	with := func(p Package, edit func(*Package)) *Package {
		p.Files = append([]PackageFile(nil), p.Files...)
		edit(&p)
		return &p
	}
	resolved := PackageCompare{Resolved: true}
	tests := []struct {
		name    string
		locked  Package
		live    *Package
		opt     PackageCompare
		rules   []warrant.Rule
		pointer string
		grade   warrant.Severity
	}{
		{"same", npm, with(npm, func(*Package) {}), resolved, nil, "", warrant.SeverityNone},
		{"npm integrity", npm, with(npm, func(p *Package) { p.Integrity = other }), resolved, []warrant.Rule{RulePackageIntegrity}, "/integrity", warrant.Critical},
		{"npm integrity offline", npm, with(npm, func(p *Package) { p.Integrity = "" }), PackageCompare{}, nil, "", warrant.SeverityNone},
		{"npm version", npm, with(npm, func(p *Package) { p.Version, p.Integrity = "1.0.1", other }), resolved, []warrant.Rule{RulePackageVersion}, "/version", warrant.Warning},
		{"npm version unknown offline", npm, with(npm, func(p *Package) { p.Version, p.Integrity = "", "" }), PackageCompare{}, nil, "", warrant.SeverityNone},
		{"another package", npm, with(npm, func(p *Package) { p.Name = "pkg2" }), resolved, []warrant.Rule{RulePackageChanged}, "/name", warrant.Warning},
		{"another type", npm, &oci, resolved, []warrant.Rule{RulePackageChanged}, "/type", warrant.Warning},
		{"no package", npm, nil, resolved, []warrant.Rule{RulePackageChanged}, "", warrant.Warning},
		{"tag moved", oci, with(oci, func(p *Package) { p.Digest = ociB }), resolved, []warrant.Rule{RulePackageIntegrity}, "/digest", warrant.Critical},
		{"latest moved", *with(oci, func(p *Package) { p.Tag = "latest" }), with(oci, func(p *Package) { p.Tag, p.Digest = "latest", ociB }), resolved, []warrant.Rule{RulePackageVersion}, "/digest", warrant.Warning},
		{"tag edited", oci, with(oci, func(p *Package) { p.Tag, p.Digest = "1.1", ociB }), resolved, []warrant.Rule{RulePackageVersion}, "/tag", warrant.Warning},
		{"digest edited", oci, with(oci, func(p *Package) { p.Digest = ociB }), PackageCompare{ContentPinned: true}, []warrant.Rule{RulePackageVersion}, "/digest", warrant.Warning},
		{"digest same", oci, with(oci, func(p *Package) { p.Tag = "" }), PackageCompare{ContentPinned: true}, nil, "", warrant.SeverityNone},
		{"pypi file hash", pypi, with(pypi, func(p *Package) { p.Files[1].SHA256 = strings.Repeat("e", 64) }), resolved, []warrant.Rule{RulePackageIntegrity}, "/files/1/sha256", warrant.Critical},
		{"pypi file added", pypi, with(pypi, func(p *Package) {
			p.Files = append(p.Files, PackageFile{"mcp_server_fetch-2025.4.7-1-py3-none-any.whl", strings.Repeat("f", 64)})
		}), resolved, []warrant.Rule{RulePackageIntegrity}, "/files", warrant.Critical},
		{"pypi file removed", pypi, with(pypi, func(p *Package) { p.Files = p.Files[:1] }), resolved, []warrant.Rule{RulePackageIntegrity}, "/files/1", warrant.Critical},
		{"remote url", Package{Type: PackageRemote, URL: "https://a.test/mcp"}, &Package{Type: PackageRemote, URL: "https://b.test/mcp"}, resolved, []warrant.Rule{RulePackageChanged}, "/url", warrant.Warning},
		{"remote key", Package{Type: PackageRemote, URL: "https://a.test/mcp", SPKI: ociB}, &Package{Type: PackageRemote, URL: "https://a.test/mcp", SPKI: oci.Digest}, resolved, []warrant.Rule{RulePackageIntegrity}, "/spki", warrant.Critical},
		{"remote key not pinned", Package{Type: PackageRemote, URL: "https://a.test/mcp"}, &Package{Type: PackageRemote, URL: "https://a.test/mcp", SPKI: oci.Digest}, resolved, nil, "", warrant.SeverityNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := ComparePackage(tc.locked, tc.live, tc.opt)
			if tc.rules == nil {
				if d != nil {
					t.Fatalf("diff = %+v, want none", d)
				}
				return
			}
			if d == nil {
				t.Fatal("no diff")
			}
			var rules []warrant.Rule
			for _, c := range d.Changes {
				rules = append(rules, c.Rule)
			}
			if diff := cmp.Diff(tc.rules, rules); diff != "" || d.Grade != tc.grade || d.Changes[0].Pointer != tc.pointer {
				t.Errorf("rules (-want +got) %s; grade %s want %s; pointer %q want %q", diff, d.Grade, tc.grade, d.Changes[0].Pointer, tc.pointer)
			}
		})
	}
}

// A package diff makes a server changed in the report even when its surface is not, counts
// toward --fail-on, and appears in the JSON only when there is one: a report without
// packages has exactly the fields it had before.
func TestCompareV2WithPackages(t *testing.T) {
	lf := samplePackageV2(t)
	plain := CompareV2(lf, lf, CompareV2Options{})
	b, _ := json.Marshal(plain)
	if plain.Drift || strings.Contains(string(b), "package") {
		t.Errorf("no drift expected, and no package members: %s", b)
	}
	locked := *lf.Servers["everything"].Package
	live := locked
	live.Integrity = "sha512-" + strings.Repeat("A", 86) + "=="
	d := ComparePackage(locked, &live, PackageCompare{Resolved: true})
	rep := CompareV2(lf, lf, CompareV2Options{Packages: map[string]*PackageDiff{"everything": d, "fetch": nil}})
	if !rep.Drift || rep.Grade != warrant.Critical || len(rep.Servers) != 1 || rep.Servers[0].Server != "everything" || rep.Servers[0].Package != d {
		t.Fatalf("report = %+v", rep)
	}
	if rep.AtLeast(warrant.Critical) != 1 || rep.Items() != 1 {
		t.Errorf("AtLeast(CRITICAL) = %d, Items = %d", rep.AtLeast(warrant.Critical), rep.Items())
	}
	b, _ = json.Marshal(rep.Servers[0])
	for _, want := range []string{`"profiles":[]`, `"package":{"grade":"CRITICAL","changes":[{"rule":"package-integrity-changed","severity":"CRITICAL"`, `"pointer":"/integrity"`, `"old":"` + everythingIntegrity + `"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s\nlacks %s", b, want)
		}
	}
}

// The committed example of a lockfile with packages is the one the docs show.
func TestDocsShowThePackageExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "agentgate.md"))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := samplePackageV2(t).Marshal()
	lf, _, _ := ParseV2(data)
	for _, name := range []string{"everything", "fetch", "github", "weather"} {
		var w writer
		w.pkg(*lf.Servers[name].Package)
		if !strings.Contains(string(doc), strings.TrimPrefix(string(w.b), "\n")) {
			t.Errorf("docs/agentgate.md does not show the %s package as written:\n%s", name, w.b)
		}
	}
}
