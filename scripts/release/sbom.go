package main

import (
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// SPDX 2.3 JSON, the subset a Go binary's SBOM needs.
type spdxDoc struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreation       `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreation struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	SPDXID           string         `json:"SPDXID"`
	Name             string         `json:"name"`
	VersionInfo      string         `json:"versionInfo"`
	DownloadLocation string         `json:"downloadLocation"`
	FilesAnalyzed    bool           `json:"filesAnalyzed"`
	Checksums        []spdxChecksum `json:"checksums,omitempty"`
	ExternalRefs     []spdxRef      `json:"externalRefs,omitempty"`
	Comment          string         `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]`)

func spdxID(prefix, s string) string {
	return "SPDXRef-" + prefix + "-" + spdxIDChars.ReplaceAllString(s, "-")
}

// module is one module a binary embeds, as debug/buildinfo reports it.
type module struct{ path, version, sum string }

// binaryModules returns the main module and the dependency modules embedded in a binary.
func binaryModules(bin string) (module, []module, string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return module{}, nil, "", err
	}
	main := module{path: bi.Main.Path, version: bi.Main.Version}
	var deps []module
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		deps = append(deps, module{path: m.Path, version: m.Version, sum: m.Sum})
	}
	sort.Slice(deps, func(i, j int) bool { return deps[i].path < deps[j].path })
	return main, deps, bi.GoVersion, nil
}

// writeSBOM writes sbom/<name>.spdx.json next to bin/ and returns its path. Everything in it
// is derived from the binary and the commit, so it is as reproducible as the binary.
func writeSBOM(bin, name, binSHA, commit string, commitTime time.Time) (string, error) {
	main, deps, gover, err := binaryModules(bin)
	if err != nil {
		return "", err
	}
	doc := spdxDoc{SPDXVersion: "SPDX-2.3", DataLicense: "CC0-1.0", SPDXID: "SPDXRef-DOCUMENT", Name: name,
		DocumentNamespace: "https://agentgate.dev/spdx/" + name + "-" + binSHA,
		CreationInfo:      spdxCreation{Created: commitTime.UTC().Format(time.RFC3339), Creators: []string{"Tool: agentgate-release", "Organization: agentgate"}}}
	binID := "SPDXRef-Binary-" + spdxIDChars.ReplaceAllString(name, "-")
	doc.Packages = append(doc.Packages, spdxPackage{SPDXID: binID, Name: name, VersionInfo: commit, DownloadLocation: "NOASSERTION",
		Checksums: []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: binSHA}}, Comment: "built with " + gover})
	doc.Relationships = append(doc.Relationships, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", binID})
	mainID := spdxID("Module", main.path)
	doc.Packages = append(doc.Packages, spdxPackage{SPDXID: mainID, Name: main.path, VersionInfo: commit, DownloadLocation: "NOASSERTION",
		ExternalRefs: []spdxRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + main.path + "@" + commit}}})
	doc.Relationships = append(doc.Relationships, spdxRelationship{binID, "GENERATED_FROM", mainID})
	for _, d := range deps {
		id := spdxID("Module", d.path+"-"+d.version)
		p := spdxPackage{SPDXID: id, Name: d.path, VersionInfo: d.version, DownloadLocation: "https://proxy.golang.org/" + strings.ToLower(d.path) + "/@v/" + d.version + ".zip",
			ExternalRefs: []spdxRef{{"PACKAGE-MANAGER", "purl", "pkg:golang/" + d.path + "@" + d.version}}}
		if d.sum != "" {
			p.Comment = "go.sum " + d.sum
		}
		doc.Packages = append(doc.Packages, p)
		doc.Relationships = append(doc.Relationships, spdxRelationship{mainID, "DEPENDS_ON", id})
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(filepath.Dir(bin)), "sbom")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".spdx.json")
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

// checkSBOM reports how an SBOM disagrees with the binary it describes.
func checkSBOM(bin, sbomPath, binSHA string) error {
	data, err := os.ReadFile(sbomPath)
	if err != nil {
		return err
	}
	var doc spdxDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s is not SPDX JSON: %w", sbomPath, err)
	}
	if doc.SPDXVersion != "SPDX-2.3" || len(doc.Packages) < 2 {
		return fmt.Errorf("%s: not an SPDX 2.3 document of a binary", sbomPath)
	}
	if cs := doc.Packages[0].Checksums; len(cs) != 1 || cs[0].ChecksumValue != binSHA {
		return fmt.Errorf("%s describes another binary (checksum mismatch)", sbomPath)
	}
	_, deps, _, err := binaryModules(bin)
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, p := range doc.Packages[2:] {
		listed[p.Name+"@"+p.VersionInfo] = true
	}
	if len(listed) != len(deps) {
		return fmt.Errorf("%s lists %d modules, the binary embeds %d", sbomPath, len(listed), len(deps))
	}
	for _, d := range deps {
		if !listed[d.path+"@"+d.version] {
			return fmt.Errorf("%s does not list %s@%s, which the binary embeds", sbomPath, d.path, d.version)
		}
	}
	return nil
}
