package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentgate-dev/agentgate/internal/cli"
)

type verifyOptions struct {
	dir, allowedSigners, identity string
	// unsigned checks everything but the signature; without it and without allowedSigners
	// verify refuses to run, so "verified" never means "the signature was not looked at".
	unsigned bool
}

// verifyFailure is a release that does not verify (exit 1), as opposed to one that could not
// be checked (exit 2).
type verifyFailure struct{ reason string }

func (v *verifyFailure) Error() string { return "verification failed: " + v.reason }

func fail(format string, a ...any) error { return &verifyFailure{fmt.Sprintf(format, a...)} }

func runVerify(ctx context.Context, o verifyOptions, env cli.Env) error {
	switch {
	case o.allowedSigners != "" && o.unsigned:
		return errors.New("--unsigned and --allowed-signers contradict each other: give one")
	case o.allowedSigners == "" && !o.unsigned:
		return errors.New("no --allowed-signers: give the allowed_signers file that names the release key " +
			"(README: Releases), or --unsigned to check everything but the signature")
	case o.allowedSigners != "" && o.identity == "":
		return errors.New("--identity is required with --allowed-signers: the signer's name in that file")
	}
	sumsPath := filepath.Join(o.dir, "SHA256SUMS")
	sums, err := os.ReadFile(sumsPath)
	if err != nil {
		return fmt.Errorf("read %s: %w", sumsPath, err)
	}
	if o.allowedSigners != "" {
		if _, err := os.Stat(sumsPath + ".sig"); errors.Is(err, fs.ErrNotExist) {
			return fail("SHA256SUMS.sig is missing: the release is unsigned (built without --key)")
		}
		cmd := exec.CommandContext(ctx, "ssh-keygen", "-Y", "verify", "-f", o.allowedSigners, "-I", o.identity,
			"-n", Namespace, "-s", sumsPath+".sig")
		cmd.Stdin = bytes.NewReader(sums)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fail("SHA256SUMS signature: %s", strings.TrimSpace(string(out)))
		}
	} else {
		fmt.Fprintln(env.Stderr, "release: --unsigned: the signature is NOT checked; only that the files agree with each other")
	}
	listed := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(sums))
	for sc.Scan() {
		sum, path, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			return fail("SHA256SUMS line %q is malformed", sc.Text())
		}
		listed[path] = sum
	}
	actual, err := checksums(o.dir)
	if err != nil {
		return err
	}
	present := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(actual)), "\n") {
		sum, path, _ := strings.Cut(line, "  ")
		present[path] = true
		want, ok := listed[path]
		if !ok {
			return fail("%s is not listed in SHA256SUMS", path)
		}
		if want != sum {
			return fail("%s: checksum %s, SHA256SUMS says %s", path, sum, want)
		}
	}
	for path := range listed {
		if !present[path] {
			return fail("%s is listed in SHA256SUMS but missing", path)
		}
	}
	var prov Provenance
	pdata, err := os.ReadFile(filepath.Join(o.dir, "PROVENANCE.json"))
	if err != nil {
		return fail("PROVENANCE.json: %v", err)
	}
	if err := json.Unmarshal(pdata, &prov); err != nil {
		return fail("PROVENANCE.json: %v", err)
	}
	manifest, err := os.ReadFile(filepath.Join(o.dir, "MANIFEST"))
	if err != nil {
		return fail("MANIFEST: %v", err)
	}
	if m := sha256.Sum256(manifest); hex.EncodeToString(m[:]) != prov.ManifestSHA256 {
		return fail("MANIFEST does not match PROVENANCE.json manifest_sha256")
	}
	if len(prov.SourceCommit) != 40 {
		return fail("PROVENANCE.json source_commit %q is not a full commit id", prov.SourceCommit)
	}
	if len(prov.Artifacts) == 0 {
		return fail("PROVENANCE.json lists no artifacts")
	}
	for _, a := range prov.Artifacts {
		if listed[a.Path] != a.SHA256 {
			return fail("%s: PROVENANCE.json and SHA256SUMS disagree", a.Path)
		}
		if err := checkSBOM(filepath.Join(o.dir, a.Path), filepath.Join(o.dir, a.SBOM), a.SHA256); err != nil {
			return fail("%v", err)
		}
	}
	return checkImages(o.dir, prov, listed, manifest)
}
