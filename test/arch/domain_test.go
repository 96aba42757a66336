package arch_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/testenv"
)

const module = "github.com/agentgate-dev/agentgate/"

// domain is the one table of what each domain package (and each small helper the domain
// trusts) may link besides the standard library: prefixes of import paths, our own
// packages written without the module path. Everything else — a store, a transport, an
// SDK — is an adapter's business. .golangci.yml's depguard rule says the same at the import
// level; this table checks the whole dependency closure, as `go list -deps` sees it.
var domain = []struct {
	pkg   string
	allow []string
	why   string
}{
	{"internal/jsontok", nil, "the one JSON tokenizer: spans, depth bound, I-JSON refusals"},
	{"internal/localfile", nil, "reading a local file as untrusted input: the standard library's os, nothing else"},
	{"internal/readbound", nil, "the read bounds every client of a remote server shares: counting readers, no I/O of its own"},
	{"internal/canon", []string{"internal/jsontok"}, "RFC 8785 is pure computation"},
	{"internal/locker", nil, "pads, chain, envelope, tickets and limits: the Padlock rules"},
	{"internal/padwire", nil, "the binary framed form of a pad's blocks: pure encoding"},
	{"internal/payment", nil, "the rules that decide whether a pad was paid for; no client, store or transport"},
	{"internal/blob", nil, "the write-once object port"},
	{"internal/signer", nil, "the signing port"},
	{"internal/textguard", []string{"golang.org/x/text/"}, "invisible characters and confusables: the Unicode tables"},
	{"internal/lockfile", []string{"internal/canon", "internal/jsontok", "internal/warrant", "internal/textguard", "golang.org/x/text/"},
		"agentgate.lock's format and hashes, graded with toolwarrant's drift rules"},
	{"internal/warrant", []string{"internal/canon", "internal/jsontok", "internal/textguard", "golang.org/x/text/"}, "toolwarrant's model, rules, index and use cases"},
	{"internal/findings", []string{"internal/canon", "internal/jsontok", "internal/textguard", "internal/warrant", "golang.org/x/text/"},
		"first-sight findings: offline phrase rules over a definition's text, graded with warrant's severities"},
	{"internal/audit", []string{"internal/canon", "internal/jsontok", "internal/signer", "internal/textguard", "internal/warrant", "golang.org/x/text/", "golang.org/x/mod/sumdb/tlog"},
		"the audit chain, and its RFC 6962 tree on the Go checksum database's tlog package"},
	{"internal/checkpoint", []string{"internal/audit", "internal/blob", "internal/canon", "internal/jsontok", "internal/signer", "internal/textguard", "internal/warrant", "golang.org/x/text/",
		"golang.org/x/mod/sumdb/"}, "signed heads and C2SP checkpoints (sumdb/note, sumdb/tlog) over the blob and signer ports"},
	{"internal/tiles", []string{"internal/audit", "internal/blob", "internal/canon", "internal/checkpoint", "internal/jsontok", "internal/signer", "internal/textguard", "internal/warrant",
		"golang.org/x/text/", "golang.org/x/mod/sumdb/"}, "the audit tree as static c2sp.org/tlog-tiles (sumdb/tlog's tile math) over its Store port; a directory is the standard library's os"},
	{"internal/trust", []string{"internal/canon", "internal/jsontok", "internal/sshsig", "internal/textguard", "internal/warrant", "golang.org/x/crypto/", "golang.org/x/text/"},
		"the trust list and SSH attestation (OpenSSH signatures through x/crypto/ssh)"},
	{"internal/iamattest", []string{"internal/canon", "internal/jsontok", "internal/sshsig", "internal/textguard", "internal/trust", "internal/warrant", "golang.org/x/crypto/", "golang.org/x/text/"},
		"IAM attestation of decisions"},
	{"internal/netguard", []string{"golang.org/x/net/idna", "golang.org/x/text/"},
		"the SSRF policy stays small enough to audit; its one dependency is the Go project's UTS 46 (IDNA), which net/http itself vendors"},
}

// ioPackages are standard packages the domain packages must not link: they would let a
// rule do I/O on its own.
var ioPackages = map[string]bool{"database/sql": true, "net/http": true, "os/exec": true}

func TestDomainDependencies(t *testing.T) {
	for _, d := range domain {
		t.Run(d.pkg, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), "go", "list", "-deps", "-f", "{{.Standard}} {{.ImportPath}}", "./"+d.pkg)
			cmd.Dir = testenv.RepoRoot(t)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list -deps %s: %v", d.pkg, err)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				std, path, _ := strings.Cut(line, " ")
				if std == "true" {
					if ioPackages[path] && d.pkg != "internal/netguard" {
						t.Errorf("%s links %s: %s", d.pkg, path, d.why)
					}
					continue
				}
				if path == module+d.pkg {
					continue
				}
				ok := false
				for _, a := range d.allow {
					if strings.HasPrefix(a, "internal/") {
						a = module + a
					}
					if path == a || strings.HasSuffix(a, "/") && strings.HasPrefix(path, a) {
						ok = true
						break
					}
				}
				if !ok {
					t.Errorf("%s links %s, which its row does not allow (%s)", d.pkg, path, d.why)
				}
			}
		})
	}
}
