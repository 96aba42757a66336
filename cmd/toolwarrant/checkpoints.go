package main

import (
	"cmp"
	"crypto"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/app/localapp"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/warrant"
	"github.com/agentgate-dev/agentgate/internal/witnessclient"
)

// verifyCheckpoints is `audit verify --checkpoints`: the log (from the catalog or an export)
// checked with every audit rule, against every signed JSON checkpoint of src (the chain
// head), and its tree against every checkpoint note of src and the last seen one.
func (a *app) verifyCheckpoints(cmd *cobra.Command, catalog, export, src string, pathStyle bool, opts audit.Options, asJSON bool, tv treeVerify) error {
	ctx := cmd.Context()
	records, tree, err := a.readLog(cmd, catalog, export)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	source, err := a.source(cmd, src, pathStyle)
	if err != nil {
		return err
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
	if rep, err = a.anchorReport(cmd, tv, tree, source, rep, asJSON); err != nil {
		return err
	}
	if !asJSON && len(rep.Problems) == 0 {
		fmt.Fprintf(a.env.Stderr, "checked against %s in %s\n", cli.Count(n, "checkpoint", ""), src)
	}
	return a.report(rep, "", asJSON)
}

// witnessOutcome is one witness's answer to `audit checkpoint --witness`.
type witnessOutcome struct {
	URL      string `json:"url"`
	Cosigned bool   `json:"cosigned"`
	Error    string `json:"error,omitempty"`
}

// auditCheckpointCmd writes a signed checkpoint of the current head for the embedded
// catalog, the local counterpart of the AWS checkpoint function.
func (a *app) auditCheckpointCmd() *cobra.Command {
	var dir, tilesOut string
	var witnesses []string
	var asJSON bool
	var f tlogFlags
	c := &cobra.Command{
		Use:   "checkpoint",
		Short: "Sign the audit tree's checkpoint (C2SP signed note) and the head; write them to a checkpoint directory",
		Long: `Write DIR/<size>.note, the C2SP checkpoint of the audit tree (origin, size, RFC 6962 root)
signed by the checkpoint key (Ed25519), and DIR/<seq>.json, the audit head signed by the log
key (the older format, kept for compatibility). Keep DIR somewhere the catalog's holder
cannot rewrite (another machine, write-once storage). The log is verified first; a log that
does not verify is never certified.

The checkpoint key is <config dir>/logs/<id>/checkpoint.key (created on first use; --key
FILE or TOOLWARRANT_CHECKPOINT_KEY to keep it elsewhere); its verifier key is printed when it
is created and by 'toolwarrant audit key --checkpoint'. The origin names the log
(--origin, TOOLWARRANT_LOG_ORIGIN; set it once, it must never change). The checkpoint
becomes this user's last seen one, so plain 'audit verify' then fails if entries up to it
are removed or rewritten.

--witness URL (repeated) submits the checkpoint to c2sp.org/tlog-witness witnesses with a
consistency proof from the size each last cosigned, and writes their cosignatures to
DIR/<size>.cosig. A witness that refuses (the checkpoint is not consistent with one it
cosigned: a fork or a rollback) is reported and the exit code is 1.

--tiles DIR (or TOOLWARRANT_TILES_DIR) then publishes the checkpoint, with the hash tiles and
entry bundles the log gained, as c2sp.org/tlog-tiles in DIR ('toolwarrant tlog tiles').` +
			exitCodes("the checkpoint was written (and every witness cosigned it)", "the log did not verify, so nothing was written; or a witness refused the checkpoint"),
		Example: "  toolwarrant audit checkpoint --dir /mnt/worm/toolwarrant-checkpoints\n  toolwarrant audit checkpoint --dir cps --origin example.com/toolwarrant --witness https://witness.example/",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return cli.Usage(cmd, "--dir is required")
			}
			cfg, st, err := a.logSettings(cmd, f)
			if err != nil {
				return err
			}
			key, err := localapp.LoadLogKey(cfg.LogKey)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			records, tree, err := a.readLog(cmd, cfg.Catalog, "")
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			rep := audit.Verify(records, audit.Options{Keys: map[string]crypto.PublicKey{key.KeyID(): key.Public()}})
			if len(rep.Problems) > 0 {
				return cli.Exit(cli.ExitFound, fmt.Errorf("the log does not verify (%s, the first at entry %d): run 'toolwarrant audit verify'", cli.Count(len(rep.Problems), "problem", ""), rep.Problems[0].Seq))
			}
			if rep.Head.Seq == 0 {
				return cli.Exit(cli.ExitUsage, errors.New("the log is empty: nothing to checkpoint"))
			}
			// The log must extend the last checkpoint this user has seen: never sign a fork.
			if st.vkey != "" && st.configDir != "" {
				if seen, err := st.seen.Load(st.vkey, nil); err == nil {
					if p := checkpoint.CheckTree(tree, []checkpoint.Located{seen}); len(p) > 0 {
						return cli.Exit(cli.ExitFound, fmt.Errorf("entry %d: %s; nothing was signed", p[0].Seq, p[0].Reason))
					}
				} else if !errors.Is(err, checkpoint.ErrNotSeen) {
					return cli.Exit(cli.ExitFound, err)
				}
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
			out := map[string]any{"head": rep.Head, "origin": st.origin, "size": tree.Size(), "root": rootOf(tree).String()}
			jsonPath := filepath.Join(dir, fmt.Sprintf("%d.json", cp.Seq))
			wroteJSON, err := writeOnce(jsonPath, b)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if !asJSON {
				if wroteJSON {
					fmt.Fprintf(a.env.Stdout, "wrote %s: head %d:%s\n", jsonPath, cp.Seq, cp.Hash)
				} else {
					fmt.Fprintf(a.env.Stdout, "checkpoint %s exists already (head %d)\n", jsonPath, cp.Seq)
				}
			}
			if st.keyPath == "" {
				fmt.Fprintln(a.env.Stderr, "warning: no configuration directory (set HOME or TOOLWARRANT_CONFIG_DIR) and no --key: only the head was signed, not the C2SP checkpoint")
				if asJSON {
					return writeJSON(a.env.Stdout, map[string]any{"head": rep.Head, "files": map[string]string{"head": jsonPath}})
				}
				return nil
			}
			nk, created, err := a.checkpointKey(st)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			vkey, err := checkpoint.VerifierKey(st.origin, nk.Public())
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if created {
				fmt.Fprintf(a.env.Stderr, "created checkpoint key %s; its verifier key (publish it, give it to witnesses):\n%s\n", st.keyPath, vkey)
			}
			st.vkey = vkey
			noteBytes, err := checkpoint.SignNote(cmd.Context(), nk, st.origin, tree.Size(), rootOf(tree))
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			out["vkey"] = vkey
			notePath := filepath.Join(dir, fmt.Sprintf("%d%s", tree.Size(), checkpoint.NoteSuffix))
			wroteNote, err := writeOnce(notePath, noteBytes)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if !wroteNote {
				// Signatures are randomized only by the key, but keep the stored one: it is the
				// one witnesses may have cosigned.
				if noteBytes, err = os.ReadFile(notePath); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
				if _, err := checkpoint.OpenNote(noteBytes, vkey, nil); err != nil {
					return cli.Exit(cli.ExitFound, fmt.Errorf("%s: %w", notePath, err))
				}
			}
			if !asJSON {
				if wroteNote {
					fmt.Fprintf(a.env.Stdout, "wrote %s: %s tree %d root %s\n", notePath, st.origin, tree.Size(), rootOf(tree))
				}
			}
			refused, cosigs, outcomes := a.submitWitnesses(cmd, witnesses, dir, tree, noteBytes)
			if len(cosigs) > 0 {
				cosigPath := filepath.Join(dir, fmt.Sprintf("%d%s", tree.Size(), checkpoint.CosigSuffix))
				old, _ := os.ReadFile(cosigPath)
				merged := checkpoint.WithCosignatures(old, cosigs)
				if err := os.WriteFile(cosigPath, merged, 0o644); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
				noteBytes = checkpoint.WithCosignatures(noteBytes, cosigs)
				if !asJSON {
					fmt.Fprintf(a.env.Stdout, "wrote %s: %s\n", cosigPath, cli.Count(strings.Count(string(merged), "\n"), "cosignature", ""))
				}
			}
			if tilesOut = cmp.Or(tilesOut, cfg.TilesDir); tilesOut != "" {
				store, where, err := a.tilesStore(cmd, tilesOut, false)
				if err != nil {
					return err
				}
				res, err := a.publishTiles(cmd, records, store, vkey, noteBytes, false)
				if err != nil {
					return err
				}
				out["tiles"] = map[string]any{"out": where, "size": res.Size, "previous": res.Previous, "tiles": res.Tiles, "bundles": res.Bundles, "checkpoint": res.Checkpoint}
				if !asJSON {
					fmt.Fprintln(a.env.Stdout, tilesLine(where, res))
				}
			}
			n, err := checkpoint.OpenNote(noteBytes, vkey, nil)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if st.configDir != "" {
				if _, err := st.seen.Advance(n, vkey); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
			}
			if asJSON {
				out["witnesses"] = outcomes
				out["files"] = map[string]string{"head": jsonPath, "note": notePath}
				if err := writeJSON(a.env.Stdout, out); err != nil {
					return err
				}
			}
			if refused {
				return cli.Found()
			}
			return nil
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "the checkpoint `DIR` (created if missing)")
	c.Flags().StringVar(&tilesOut, "tiles", "", "also publish the checkpoint with its c2sp.org/tlog-tiles to `DIR` or s3://BUCKET[/PREFIX] (env TOOLWARRANT_TILES_DIR)")
	c.Flags().StringArrayVar(&witnesses, "witness", nil, "submit the checkpoint to the c2sp.org/tlog-witness witness at `URL` (its submission prefix); repeat for several")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: head, origin, size, root, vkey, files, witnesses")
	f.add(c, true)
	return c
}

// submitWitnesses asks each witness to cosign, from the size of the newest earlier note
// in dir (the witness says if it saw another). It returns whether one refused, the
// cosignature lines received and each witness's outcome.
func (a *app) submitWitnesses(cmd *cobra.Command, urls []string, dir string, tree *audit.Tree, noteBytes []byte) (bool, []byte, []witnessOutcome) {
	var old int64
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			if n, kind, ok := checkpoint.SizeOf(e.Name()); ok && kind == checkpoint.NoteSuffix && n < tree.Size() && n > old {
				old = n
			}
		}
	}
	refused := false
	var cosigs []byte
	outcomes := []witnessOutcome{}
	for _, u := range urls {
		o := witnessOutcome{URL: u}
		w, err := witnessclient.New(witnessclient.Config{URL: u})
		var sigs []byte
		if err == nil {
			sigs, err = checkpoint.Cosign(cmd.Context(), w, tree, tree.Size(), noteBytes, old)
		}
		if err != nil {
			refused = true
			o.Error = err.Error()
			fmt.Fprintf(a.env.Stderr, "witness %s did not cosign checkpoint %d: %s\n", u, tree.Size(), visible(err.Error()))
		} else {
			o.Cosigned = true
			cosigs = append(cosigs, sigs...)
		}
		outcomes = append(outcomes, o)
	}
	return refused, cosigs, outcomes
}

// writeOnce creates path with b unless it exists; it reports whether it wrote.
func writeOnce(path string, b []byte) (bool, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return false, err
	}
	return true, f.Close()
}
