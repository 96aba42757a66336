// Command release builds verifiable agentgate release artifacts from one explicit commit:
//
//	go run ./scripts/release build  --commit HEAD --out /tmp/rel [--key ~/.ssh/release_ed25519]
//	go run ./scripts/release verify --dir /tmp/rel [--allowed-signers FILE --identity NAME]
//
// build resolves the commit to its full ID, exports exactly that tree with `git archive` into
// a fresh directory (no working-tree file, cache or database can leak in), writes a manifest
// of the exported files (size, SHA-256), builds every released binary and Lambda bootstrap
// with CGO_ENABLED=0 -trimpath -buildvcs=false and a fixed build ID so the output is
// byte-reproducible, writes an SPDX 2.3 SBOM per binary from its embedded module information,
// PROVENANCE.json, and SHA256SUMS, and signs SHA256SUMS with an OpenSSH key (namespace
// agentgate-release). verify checks all of that again. Exit codes: 0 ok, 1 verification
// failed, 2 could not run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
)

// Namespace is the ssh-keygen -Y namespace of release signatures.
const Namespace = "agentgate-release"

func main() {
	// SIGTERM too: a cancelled build still removes its podman store.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, newRoot(cli.OSEnv()), os.Args[1:], cli.OSEnv())
	stop()
	os.Exit(code)
}

func newRoot(env cli.Env) *cobra.Command {
	root := &cobra.Command{Use: "release", Short: "Build and verify reproducible, signed agentgate releases"}
	var o buildOptions
	build := &cobra.Command{
		Use:   "build",
		Short: "Export one commit and build signed, reproducible artifacts",
		Long: `build exports --commit with git archive and builds every released binary from that export,
and (unless --images=false) the lockerd and toolwarrant container images from the linux
binaries with podman, each written as a reproducible OCI archive under images/ whose digests
go into MANIFEST and PROVENANCE.json.

Exit codes: 0 built, 2 could not build (unknown commit, OUT inside the source tree, build or
signing failure).`,
		Example: `  go run ./scripts/release build --commit v0.1.0 --out /tmp/agentgate-v0.1.0 --key ~/.ssh/release_ed25519
  go run ./scripts/release build --commit HEAD --out /tmp/rel --image-base local   # no registry needed`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.out == "" {
				return cli.Usage(cmd, "--out is required")
			}
			if err := runBuild(cmd.Context(), o, env); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			return nil
		},
	}
	build.Flags().StringVar(&o.commit, "commit", "HEAD", "commit-ish to release")
	build.Flags().StringVar(&o.out, "out", "", "output directory, outside the source tree (must not exist or be empty)")
	build.Flags().StringVar(&o.key, "key", "", "OpenSSH private key that signs SHA256SUMS (unsigned without it)")
	build.Flags().StringVar(&o.repo, "repo", ".", "git repository to export from")
	build.Flags().StringSliceVar(&o.platforms, "platforms", nil, "limit to these GOOS/GOARCH pairs (default: all release platforms)")
	build.Flags().StringSliceVar(&o.only, "only", nil, "limit to these binaries (default: all)")
	build.Flags().BoolVar(&o.images, "images", true, "also build the container images (infra/lockerd, infra/extmcp) as OCI archives under images/; needs podman")
	build.Flags().StringVar(&o.imageBase, "image-base", "", "the images' base: empty for the Dockerfiles' pinned distroless (pulled), local for the local base built from infra/base (nothing pulled), or an image `REF`")

	var v verifyOptions
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Verify a release directory: signature, checksums, SBOMs, provenance",
		Long: `verify recomputes every checksum, checks the SHA256SUMS signature with ssh-keygen -Y verify
against --allowed-signers (or, with --unsigned, says that it does not), checks that each SBOM lists exactly the modules embedded
in its binary, that PROVENANCE.json agrees with the manifest and the artifacts, and that
each image archive is whole (every blob's digest), has the manifest and config digests
PROVENANCE.json and MANIFEST record, and holds exactly the release binary.

Exit codes: 0 verified, 1 verification failed (the reason is printed), 2 could not run.`,
		Example: `  go run ./scripts/release verify --dir /tmp/agentgate-v0.1.0 --allowed-signers allowed_signers --identity release@agentgate`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if v.dir == "" {
				return cli.Usage(cmd, "--dir is required")
			}
			err := runVerify(cmd.Context(), v, env)
			var vf *verifyFailure
			if errors.As(err, &vf) {
				return cli.Exit(cli.ExitFound, err)
			}
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if v.unsigned {
				fmt.Fprintf(env.Stdout, "release %s verified, except its signature (--unsigned)\n", v.dir)
				return nil
			}
			fmt.Fprintf(env.Stdout, "release %s verified, signed by %s\n", v.dir, v.identity)
			return nil
		},
	}
	verify.Flags().StringVar(&v.dir, "dir", "", "release directory written by build")
	verify.Flags().StringVar(&v.allowedSigners, "allowed-signers", "", "ssh allowed_signers file; required to check the signature")
	verify.Flags().StringVar(&v.identity, "identity", "", "signer identity in the allowed_signers file")
	verify.Flags().BoolVar(&v.unsigned, "unsigned", false, "check everything but the signature (an unsigned release, or no allowed_signers at hand)")
	root.AddCommand(build, verify)
	return root
}
