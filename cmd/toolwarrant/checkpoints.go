package main

import (
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/localapp"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// verifyCheckpoints is `audit verify --checkpoints`: the log (from the catalog or an export)
// checked with every audit rule and against every signed checkpoint of src.
func (a *app) verifyCheckpoints(cmd *cobra.Command, catalog, export, src string, pathStyle bool, opts audit.Options, asJSON bool) error {
	ctx := cmd.Context()
	var records []warrant.AuditRecord
	if export != "" {
		f, err := os.Open(export)
		if err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
		defer f.Close()
		if records, err = audit.ParseExport(f); err != nil {
			return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %v", export, err))
		}
	} else {
		cat, err := openAuditLog(ctx, catalog)
		if err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
		defer cat.Close()
		if err := eachRecord(cmd, cat, func(r warrant.AuditRecord) error { records = append(records, r); return nil }); err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
	}
	var source checkpoint.Source
	if strings.HasPrefix(src, "s3://") {
		awsCfg, err := awsapp.AWSConfig(ctx, config.AWS{MaxAttempts: 3})
		if err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
		if source, err = awsapp.CheckpointSource(ctx, awsCfg, src, pathStyle); err != nil {
			return cli.Usage(cmd, "--checkpoints %q: %v", src, err)
		}
	} else {
		if st, err := os.Stat(src); err != nil || !st.IsDir() {
			return cli.Usage(cmd, "--checkpoints %q is not a directory (or use s3://BUCKET)", src)
		}
		source = checkpoint.Dir(src)
	}
	seq := iter.Seq2[warrant.AuditRecord, error](func(yield func(warrant.AuditRecord, error) bool) {
		for _, r := range records {
			if !yield(r, nil) {
				return
			}
		}
	})
	rep, n, err := checkpoint.Verify(ctx, seq, source, opts)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read checkpoints %s: %w", src, err))
		}
		return cli.Exit(cli.ExitFound, fmt.Errorf("checkpoints %s: %w", src, err))
	}
	if !asJSON && len(rep.Problems) == 0 {
		fmt.Fprintf(a.env.Stderr, "checked against %d checkpoint(s) in %s\n", n, src)
	}
	return a.report(rep, "", asJSON)
}

// auditCheckpointCmd writes a signed checkpoint of the current head for the embedded
// catalog, the local counterpart of the AWS checkpoint function.
func (a *app) auditCheckpointCmd() *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "checkpoint",
		Short: "Sign the current audit head with the log key and write it to a checkpoint directory",
		Long: `Write DIR/<seq>.json: the audit head signed by the log key. Keep DIR somewhere the catalog's
holder cannot rewrite (another machine, write-once storage); 'audit verify --checkpoints DIR'
then catches a history rewritten or truncated after any checkpoint, even one re-signed with
the log key. The log is verified first; a log that does not verify is never certified.` +
			exitCodes("the checkpoint was written", "the log did not verify, so nothing was written"),
		Example: "  toolwarrant audit checkpoint --dir /mnt/worm/toolwarrant-checkpoints",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return cli.Usage(cmd, "--dir is required")
			}
			cfg, err := a.settings(cmd)
			if err != nil {
				return err
			}
			key, err := localapp.LoadLogKey(cfg.LogKey)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			cat, err := openAuditLog(cmd.Context(), cfg.Catalog)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			defer cat.Close()
			v := audit.NewVerifier(audit.Options{Keys: map[string]crypto.PublicKey{key.KeyID(): key.Public()}})
			if err := eachRecord(cmd, cat, func(r warrant.AuditRecord) error { v.Add(r); return nil }); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			rep := v.Finish()
			if len(rep.Problems) > 0 {
				return cli.Exit(cli.ExitFound, fmt.Errorf("the log does not verify (%d problem(s), first at entry %d): run 'toolwarrant audit verify'", len(rep.Problems), rep.Problems[0].Seq))
			}
			if rep.Head.Seq == 0 {
				return cli.Exit(cli.ExitUsage, errors.New("the log is empty: nothing to checkpoint"))
			}
			cp, err := checkpoint.Sign(cmd.Context(), key, rep.Head, a.deps.now())
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			b, err := cp.Marshal()
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			path := filepath.Join(dir, fmt.Sprintf("%d.json", cp.Seq))
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if errors.Is(err, fs.ErrExist) {
				fmt.Fprintf(a.env.Stdout, "checkpoint %s exists already (head %d)\n", path, cp.Seq)
				return nil
			}
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if _, err := f.Write(b); err != nil {
				f.Close()
				return cli.Exit(cli.ExitUsage, err)
			}
			if err := f.Close(); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			fmt.Fprintf(a.env.Stdout, "wrote %s: head %d:%s\n", path, cp.Seq, cp.Hash)
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the checkpoint `DIR` (created if missing)")
	return c
}
