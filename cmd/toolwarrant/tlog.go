package main

import (
	"context"
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/app/awsbase"
	"github.com/agentgate-dev/agentgate/internal/app/localapp"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/tiles"
	"github.com/agentgate-dev/agentgate/internal/tiles/s3tiles"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The audit log as a transparency log (docs/transparency-log.md): the tree over the
// entries, C2SP checkpoint notes, the last seen checkpoint, proofs and witnesses.

// tlogFlags are the flags the tree-aware audit commands share.
type tlogFlags struct {
	origin, vkey, key string
}

func (f *tlogFlags) add(c *cobra.Command, withKey bool) {
	c.Flags().StringVar(&f.origin, "origin", "", "the log's `ORIGIN`, the first line of its checkpoints (env TOOLWARRANT_LOG_ORIGIN; default: from the checkpoint key, else toolwarrant.local/<hash of the catalog path>)")
	c.Flags().StringVar(&f.vkey, "vkey", "", "the checkpoint verifier `KEY` (name+hash+base64, or a file holding it; env TOOLWARRANT_CHECKPOINT_VKEY; default: from the checkpoint key, else the one recorded with the last seen checkpoint)")
	if withKey {
		c.Flags().StringVar(&f.key, "key", "", "the checkpoint key `FILE`, Ed25519 PEM (env TOOLWARRANT_CHECKPOINT_KEY; default: <config dir>/logs/<id>/checkpoint.key, created on first use)")
	}
}

// logState is where one log's local transparency state lives and which keys name it.
type logState struct {
	configDir string // "" when none could be found: no seen checkpoint, no default key
	origin    string
	keyPath   string // the checkpoint key file ("" without a config dir and --key)
	vkey      string // the checkpoint verifier key ("" when unknown)
	// originFile remembers the origin of this catalog's checkpoints, so later commands
	// need no --origin.
	originFile string
	seen       checkpoint.Seen
}

// configDir is TOOLWARRANT_CONFIG_DIR, else $XDG_CONFIG_HOME/toolwarrant, else
// $HOME/.config/toolwarrant; "" when none is set.
func (a *app) configDir() string {
	if d := strings.TrimSpace(a.env.Getenv("TOOLWARRANT_CONFIG_DIR")); d != "" {
		return d
	}
	if d := strings.TrimSpace(a.env.Getenv("XDG_CONFIG_HOME")); d != "" {
		return filepath.Join(d, "toolwarrant")
	}
	if d := strings.TrimSpace(a.env.Getenv("HOME")); d != "" {
		return filepath.Join(d, ".config", "toolwarrant")
	}
	return ""
}

func readVKey(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", nil
	}
	if _, err := note.NewVerifier(s); err == nil {
		return s, nil
	}
	b, err := os.ReadFile(s)
	if err != nil {
		return "", fmt.Errorf("--vkey %q is neither a verifier key (name+hash+base64) nor a readable file", s)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			if _, err := note.NewVerifier(l); err != nil {
				return "", fmt.Errorf("%s: %v", s, err)
			}
			return l, nil
		}
	}
	return "", fmt.Errorf("%s holds no verifier key", s)
}

// logSettings resolves the settings and the log state of their catalog (state).
func (a *app) logSettings(cmd *cobra.Command, f tlogFlags) (config.Toolwarrant, *logState, error) {
	cfg, err := a.settings(cmd)
	if err != nil {
		return cfg, nil, err
	}
	st, err := a.state(cmd, cfg.Catalog, f)
	return cfg, st, err
}

// state resolves origin and keys: flag > environment > default. A setting that does not
// resolve is a usage error.
func (a *app) state(cmd *cobra.Command, catalog string, f tlogFlags) (*logState, error) {
	st, err := a.resolveState(catalog, f)
	if err != nil {
		return nil, cli.Usage(cmd, "%v", err)
	}
	return st, nil
}

func (a *app) resolveState(catalog string, f tlogFlags) (*logState, error) {
	st := &logState{configDir: a.configDir()}
	st.seen = checkpoint.Seen{Dir: filepath.Join(st.configDir, "logs")}
	pick := func(flag, env string) string {
		if flag != "" {
			return flag
		}
		return strings.TrimSpace(a.env.Getenv(env))
	}
	vk, err := readVKey(pick(f.vkey, "TOOLWARRANT_CHECKPOINT_VKEY"))
	if err != nil {
		return nil, err
	}
	st.vkey = vk
	st.origin = pick(f.origin, "TOOLWARRANT_LOG_ORIGIN")
	if st.origin == "" && vk != "" {
		st.origin, _, _ = strings.Cut(vk, "+")
	}
	sum := sha256.Sum256([]byte(catalog))
	catalogID := hex.EncodeToString(sum[:8])
	if st.configDir != "" {
		st.originFile = filepath.Join(st.configDir, "catalogs", catalogID+".origin")
	}
	if st.origin == "" && st.originFile != "" {
		if b, err := os.ReadFile(st.originFile); err == nil {
			st.origin = strings.TrimSpace(string(b))
		}
	}
	if st.origin == "" {
		st.origin = "toolwarrant.local/" + catalogID
	}
	if !checkpoint.ValidOrigin(st.origin) {
		return nil, fmt.Errorf("origin %q must be non-empty, without spaces or '+' (a schema-less URL such as example.com/toolwarrant)", st.origin)
	}
	if vk != "" {
		if name, _, _ := strings.Cut(vk, "+"); name != st.origin {
			return nil, fmt.Errorf("the verifier key names %q, not the origin %q", name, st.origin)
		}
	}
	st.keyPath = pick(f.key, "TOOLWARRANT_CHECKPOINT_KEY")
	if st.keyPath == "" && st.configDir != "" {
		st.keyPath = filepath.Join(st.seen.Dir, checkpoint.LogID(st.origin), "checkpoint.key")
	}
	if st.vkey == "" && st.keyPath != "" {
		if k, err := keysigner.Load(st.keyPath); err == nil {
			if st.vkey, err = checkpoint.VerifierKey(st.origin, k.Public()); err != nil {
				return nil, fmt.Errorf("checkpoint key %s: %v", st.keyPath, err)
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	if st.vkey == "" && st.configDir != "" {
		if vk, err := st.seen.VerifierKey(st.origin); err == nil {
			st.vkey = vk
		}
	}
	return st, nil
}

// checkpointKey loads the checkpoint key, creating it on first use, and remembers the
// catalog's origin.
func (a *app) checkpointKey(st *logState) (*keysigner.Signer, bool, error) {
	if st.keyPath == "" {
		return nil, false, errors.New("no checkpoint key: set HOME or TOOLWARRANT_CONFIG_DIR (the key is kept there), or pass --key FILE")
	}
	if st.originFile != "" {
		if err := os.MkdirAll(filepath.Dir(st.originFile), 0o700); err != nil {
			return nil, false, err
		}
		if err := os.WriteFile(st.originFile, []byte(st.origin+"\n"), 0o600); err != nil {
			return nil, false, err
		}
	}
	k, err := keysigner.Load(st.keyPath)
	if err == nil {
		_, err = checkpoint.VerifierKey(st.origin, k.Public())
		return k, false, err
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(st.keyPath), 0o700); err != nil {
		return nil, false, err
	}
	k, err = keysigner.Create(st.keyPath, keysigner.Ed25519)
	return k, true, err
}

// treeOf reads the log (catalog or export) into a tree, with the records.
func (a *app) readLog(cmd *cobra.Command, catalog, export string) ([]warrant.AuditRecord, *audit.Tree, error) {
	var recs []warrant.AuditRecord
	if export != "" {
		f, err := os.Open(export)
		if err != nil {
			return nil, nil, err
		}
		defer f.Close()
		if recs, err = audit.ParseExport(f); err != nil {
			return nil, nil, fmt.Errorf("%s: %v", export, err)
		}
	} else {
		cat, err := openAuditLog(cmd.Context(), catalog)
		if err != nil {
			return nil, nil, err
		}
		defer cat.Close()
		if err := eachRecord(cmd, cat, func(r warrant.AuditRecord) error { recs = append(recs, r); return nil }); err != nil {
			return nil, nil, err
		}
	}
	t := &audit.Tree{}
	for _, r := range recs {
		if err := t.Append(r.Body); err != nil {
			return nil, nil, err
		}
	}
	return recs, t, nil
}

// source opens --checkpoints DIR|s3://…
func (a *app) source(cmd *cobra.Command, src string, pathStyle bool) (checkpoint.Source, error) {
	if strings.HasPrefix(src, "s3://") {
		awsCfg, err := awsbase.AWSConfig(cmd.Context(), config.AWS{MaxAttempts: 3})
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, err)
		}
		s, err := awsapp.CheckpointSource(cmd.Context(), awsCfg, src, pathStyle)
		if err != nil {
			return nil, cli.Usage(cmd, "--checkpoints %q: %v", src, err)
		}
		return s, nil
	}
	if st, err := os.Stat(src); err != nil || !st.IsDir() {
		return nil, cli.Usage(cmd, "--checkpoints %q is not a directory (or use s3://BUCKET)", src)
	}
	return checkpoint.Dir(src), nil
}

func witnessVerifiers(keys []string) ([]note.Verifier, error) {
	var out []note.Verifier
	for _, k := range keys {
		v, err := checkpoint.WitnessVerifier(k)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// anchorResult is what anchoring a verification on checkpoint notes found.
type anchorResult struct {
	problems []audit.Problem
	checked  []checkpoint.Located
	seen     *checkpoint.Located
	advanced bool
}

// anchor checks the tree against the last seen checkpoint and the notes of src (nil: none),
// requires quorum cosignatures from witnesses on the newest one, and, when the log
// verified (ok), moves the last seen checkpoint forward to the newest.
func (a *app) anchor(cmd *cobra.Command, st *logState, t *audit.Tree, src checkpoint.Source, witnesses []note.Verifier, quorum int, policy *checkpoint.Policy, ok bool) (anchorResult, error) {
	var res anchorResult
	if st.vkey == "" {
		if src != nil {
			names, err := src.Names(cmd.Context())
			if err != nil {
				return res, err
			}
			for _, n := range names {
				if _, _, isNote := checkpoint.SizeOf(n); isNote {
					return res, cli.Exit(cli.ExitUsage, fmt.Errorf("%s holds checkpoint notes but no checkpoint verifier key is known: pass --vkey (toolwarrant audit key --checkpoint prints it)", src))
				}
			}
		}
		if len(witnesses) > 0 {
			return res, cli.Exit(cli.ExitUsage, errors.New("--witness-key needs the checkpoint verifier key: pass --vkey"))
		}
		return res, nil
	}
	if st.configDir != "" {
		seen, err := st.seen.Load(st.vkey, witnesses)
		switch {
		case err == nil:
			res.seen = &seen
			res.checked = append(res.checked, seen)
		case !errors.Is(err, checkpoint.ErrNotSeen):
			return res, cli.Exit(cli.ExitFound, err)
		}
	}
	if src != nil {
		notes, err := checkpoint.LoadNotes(cmd.Context(), src, st.vkey, witnesses)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return res, cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read checkpoints %s: %w", src, err))
			}
			return res, cli.Exit(cli.ExitFound, fmt.Errorf("checkpoints %s: %w", src, err))
		}
		res.checked = append(res.checked, notes...)
	}
	res.problems = checkpoint.CheckTree(t, res.checked)
	if policy != nil {
		// --policy: the policy's quorum (k of n, in groups) on the newest checkpoint.
		if len(res.checked) == 0 && policy.Quorum != checkpoint.QuorumNone {
			res.problems = append(res.problems, audit.Problem{Seq: t.Size(), Reason: "no checkpoint note to check the policy's quorum on"})
		} else if len(res.checked) > 0 {
			newest := newestOf(res.checked)
			if err := policy.Check(newest.Note); err != nil {
				res.problems = append(res.problems, audit.Problem{Seq: newest.Size, Reason: fmt.Sprintf("%s is %v", newest, err)})
			}
		}
	} else if len(witnesses) > 0 {
		if len(res.checked) == 0 {
			res.problems = append(res.problems, audit.Problem{Seq: t.Size(), Reason: "no checkpoint note to check the witnesses' cosignatures on"})
		} else {
			newest := newestOf(res.checked)
			if got := len(newest.Witnesses); got < quorum {
				res.problems = append(res.problems, audit.Problem{Seq: newest.Size, Reason: fmt.Sprintf("%s is cosigned by %d of the witnesses given (%s), fewer than the quorum %d", newest, got, strings.Join(newest.Witnesses, ", "), quorum)})
			}
		}
	}
	if ok && len(res.problems) == 0 && len(res.checked) > 0 && st.configDir != "" {
		newest := newestOf(res.checked)
		moved, err := st.seen.Advance(newest.Note, st.vkey)
		if err != nil {
			return res, cli.Exit(cli.ExitUsage, err)
		}
		res.advanced = moved
	}
	return res, nil
}

func (a *app) auditProveCmd() *cobra.Command {
	var export, checkpoints string
	var asJSON, pathStyle bool
	var f tlogFlags
	c := &cobra.Command{
		Use:   "prove SEQ",
		Short: "Print an inclusion proof of entry SEQ in a signed checkpoint (c2sp.org/tlog-proof), verifiable offline",
		Long: `Print a c2sp.org/tlog-proof for audit entry SEQ: the entry's canonical body (the "extra"
line, base64), its leaf index (SEQ-1), the RFC 6962 inclusion proof, and the signed checkpoint
note (with any witness cosignatures) it is proved against. Any verifier holding the
checkpoint verifier key checks it with golang.org/x/mod/sumdb/note and sumdb/tlog alone
(docs/transparency-log.md shows a 20-line one).

The checkpoint is the newest note in --checkpoints that covers SEQ, else the last seen
checkpoint; the log must agree with it, or nothing is printed and the exit code is 1.` +
			exitCodes("the proof was printed", "the log contradicts the checkpoint"),
		Example: "  toolwarrant audit prove 12 > entry-12.tlog-proof\n  toolwarrant audit prove 12 --checkpoints /mnt/worm/checkpoints --json",
		Args:    cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || seq < 1 {
				return cli.Usage(cmd, "SEQ must be an entry number (1 or more), not %q", args[0])
			}
			cfg, st, err := a.logSettings(cmd, f)
			if err != nil {
				return err
			}
			if st.vkey == "" {
				return cli.Exit(cli.ExitUsage, errors.New("no checkpoint verifier key: run 'toolwarrant audit checkpoint' first, or pass --vkey"))
			}
			recs, t, err := a.readLog(cmd, cfg.Catalog, export)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if seq > t.Size() {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("there is no audit entry %d (the log has %d)", seq, t.Size()))
			}
			var cands []checkpoint.Located
			if checkpoints != "" {
				src, err := a.source(cmd, checkpoints, pathStyle)
				if err != nil {
					return err
				}
				if cands, err = checkpoint.LoadNotes(cmd.Context(), src, st.vkey, nil); err != nil {
					return cli.Exit(cli.ExitFound, err)
				}
			} else if st.configDir != "" {
				if seen, err := st.seen.Load(st.vkey, nil); err == nil {
					cands = append(cands, seen)
				} else if !errors.Is(err, checkpoint.ErrNotSeen) {
					return cli.Exit(cli.ExitFound, err)
				}
			}
			var cp, beyond *checkpoint.Located
			for i := range cands {
				switch {
				case cands[i].Size >= seq && cands[i].Size <= t.Size():
					cp = &cands[i]
				case cands[i].Size > t.Size():
					beyond = &cands[i]
				}
			}
			if cp == nil && beyond != nil {
				// A signed checkpoint of a longer log than this one: the log contradicts it.
				return cli.Exit(cli.ExitFound, fmt.Errorf("the log has %d entries, fewer than %s: entries were deleted; run 'toolwarrant audit verify'", t.Size(), beyond))
			}
			if cp == nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("no checkpoint covers entry %d: run 'toolwarrant audit checkpoint' (or pass --checkpoints)", seq))
			}
			if p := checkpoint.CheckTree(t, []checkpoint.Located{*cp}); len(p) > 0 {
				return cli.Exit(cli.ExitFound, fmt.Errorf("entry %d: %s", p[0].Seq, p[0].Reason))
			}
			proof, err := t.InclusionProof(seq-1, cp.Size)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			body := recs[seq-1].Body
			if asJSON {
				hs := make([]string, len(proof))
				for i, h := range proof {
					hs[i] = h.String()
				}
				return writeJSON(a.env.Stdout, map[string]any{"seq": seq, "index": seq - 1, "body": json.RawMessage(body),
					"leafHash": audit.LeafHash(body).String(), "treeSize": cp.Size, "proof": hs, "checkpoint": string(cp.Bytes)})
			}
			var b strings.Builder
			b.WriteString("c2sp.org/tlog-proof@v1\nextra " + base64.StdEncoding.EncodeToString(body) + "\nindex " + strconv.FormatInt(seq-1, 10) + "\n")
			for _, h := range proof {
				b.WriteString(h.String() + "\n")
			}
			b.WriteString("\n")
			b.Write(cp.Bytes)
			_, err = fmt.Fprint(a.env.Stdout, b.String())
			return err
		},
	}
	c.Flags().StringVar(&export, "export", "", "prove from this export `FILE` (JSON Lines) instead of the catalog")
	c.Flags().StringVar(&checkpoints, "checkpoints", "", "prove against the newest checkpoint note in `DIR` or s3://BUCKET[/PREFIX] (default: the last seen checkpoint)")
	c.Flags().BoolVar(&pathStyle, "s3-path-style", false, "path-style S3 addressing for --checkpoints s3:// (moto, LocalStack)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: seq, index, body, leafHash, treeSize, proof, checkpoint")
	f.add(c, false)
	return c
}

func (a *app) auditConsistencyCmd() *cobra.Command {
	var export string
	var asJSON bool
	c := &cobra.Command{
		Use:   "consistency OLD NEW",
		Short: "Print the RFC 6962 consistency proof between the trees of sizes OLD and NEW (two checkpoints)",
		Long: `Print the consistency proof that the audit tree of size OLD is a prefix of the tree of size NEW,
one base64 hash per line (what a c2sp.org/tlog-witness request carries): with the two
checkpoints' roots, tlog.CheckTree(proof, NEW, newRoot, OLD, oldRoot) checks it offline.
--json adds both roots as the log computes them.` + exitCodes("the proof was printed", ""),
		Example: "  toolwarrant audit consistency 40 57",
		Args:    cli.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			oldN, err1 := strconv.ParseInt(args[0], 10, 64)
			newN, err2 := strconv.ParseInt(args[1], 10, 64)
			if err1 != nil || err2 != nil || oldN < 1 || newN < oldN {
				return cli.Usage(cmd, "give two tree sizes, 1 ≤ OLD ≤ NEW")
			}
			cfg, err := a.settings(cmd)
			if err != nil {
				return err
			}
			_, t, err := a.readLog(cmd, cfg.Catalog, export)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if newN > t.Size() {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("the log has %d entries, fewer than %d", t.Size(), newN))
			}
			proof, err := t.ConsistencyProof(oldN, newN)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if asJSON {
				r1, _ := t.Root(oldN)
				r2, _ := t.Root(newN)
				hs := make([]string, len(proof))
				for i, h := range proof {
					hs[i] = h.String()
				}
				return writeJSON(a.env.Stdout, map[string]any{"old": oldN, "new": newN, "oldRoot": r1.String(), "newRoot": r2.String(), "proof": hs})
			}
			for _, h := range proof {
				fmt.Fprintln(a.env.Stdout, h.String())
			}
			return nil
		},
	}
	c.Flags().StringVar(&export, "export", "", "read this export `FILE` (JSON Lines) instead of the catalog")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: old, new, oldRoot, newRoot, proof")
	return c
}

// rootOf is a helper for messages.
func rootOf(t *audit.Tree) tlog.Hash {
	r, _ := t.Root(t.Size())
	return r
}

// treeVerify is what `audit verify` checks the tree with.
type treeVerify struct {
	st        *logState
	witnesses []note.Verifier
	quorum    int
	policy    *checkpoint.Policy // --policy: its quorum instead of quorum
}

// anchorReport adds the checkpoint-note checks to rep and says on stderr what the log
// was anchored on.
func (a *app) anchorReport(cmd *cobra.Command, tv treeVerify, t *audit.Tree, src checkpoint.Source, rep audit.Report, asJSON bool) (audit.Report, error) {
	res, err := a.anchor(cmd, tv.st, t, src, tv.witnesses, tv.quorum, tv.policy, rep.OK())
	if err != nil {
		return rep, err
	}
	rep.Problems = append(rep.Problems, res.problems...)
	rep.Tree = &audit.TreeHead{Size: t.Size(), Root: rootOf(t).String()}
	rep.Checkpoints = []audit.CheckpointRef{}
	for _, c := range res.checked {
		rep.Checkpoints = append(rep.Checkpoints, audit.CheckpointRef{Origin: c.Origin, Size: c.Size, Where: c.Where, Witnesses: append([]string{}, c.Witnesses...)})
	}
	if !asJSON && len(rep.Problems) == 0 {
		if len(res.checked) == 0 {
			if tv.st.vkey != "" {
				fmt.Fprintf(a.env.Stderr, "no checkpoint of %s seen yet: run 'toolwarrant audit checkpoint', or verify with --checkpoints\n", tv.st.origin)
			}
		} else {
			newest := newestOf(res.checked)
			fmt.Fprintf(a.env.Stderr, "consistent with %s; tree %d root %s\n", newest, t.Size(), rootOf(t))
			if len(newest.Witnesses) > 0 {
				fmt.Fprintf(a.env.Stderr, "cosigned by %s\n", strings.Join(newest.Witnesses, ", "))
			}
			if res.advanced {
				fmt.Fprintf(a.env.Stderr, "last seen checkpoint is now size %d\n", newest.Size)
			}
		}
	}
	return rep, nil
}

// printVKey is `audit key --checkpoint`.
func (a *app) printVKey(cmd *cobra.Command, catalog string, f tlogFlags, pub string) error {
	st, err := a.state(cmd, catalog, f)
	if err != nil {
		return err
	}
	if pub != "" {
		keys, err := readPublicKeys(pub)
		if err != nil {
			return cli.Exit(cli.ExitUsage, err)
		}
		for _, k := range keys {
			vk, err := checkpoint.VerifierKey(st.origin, k)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %v", pub, err))
			}
			fmt.Fprintln(a.env.Stdout, vk)
		}
		return nil
	}
	if st.vkey == "" {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("no checkpoint key for %s yet: 'toolwarrant audit checkpoint' creates it", st.origin))
	}
	fmt.Fprintln(a.env.Stdout, st.vkey)
	return nil
}

// newestOf returns the checkpoint of the largest size, the most cosigned among equals.
func newestOf(cps []checkpoint.Located) checkpoint.Located {
	return slices.MaxFunc(cps, func(x, y checkpoint.Located) int {
		if x.Size != y.Size {
			return int(x.Size - y.Size)
		}
		return len(x.Witnesses) - len(y.Witnesses)
	})
}

// recordLog is a log read into memory (the catalog's or an export's records, in order) as
// the checkpoint.Log the tile writer reads; the writer checks it is contiguous and linked.
type recordLog []warrant.AuditRecord

func (l recordLog) AuditHead(context.Context) (warrant.AuditHead, error) {
	if len(l) == 0 {
		return warrant.Genesis(), nil
	}
	return warrant.AuditHead{Seq: l[len(l)-1].Seq, Hash: l[len(l)-1].Hash}, nil
}

func (l recordLog) AuditRecords(_ context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	i := sort.Search(len(l), func(i int) bool { return l[i].Seq > after })
	return l[i:min(len(l), i+limit)], nil
}

// tilesStore opens where a tiled log is published: a directory (relative to the working
// directory), or s3://BUCKET[/PREFIX] with the caller's AWS credentials.
func (a *app) tilesStore(cmd *cobra.Command, out string, pathStyle bool) (tiles.Store, string, error) {
	if rest, ok := strings.CutPrefix(out, "s3://"); ok {
		bucket, prefix, _ := strings.Cut(rest, "/")
		if bucket == "" {
			return nil, "", cli.Usage(cmd, "--out %q: want s3://BUCKET[/PREFIX] or a directory", out)
		}
		awsCfg, err := awsbase.AWSConfig(cmd.Context(), config.AWS{MaxAttempts: 3})
		if err != nil {
			return nil, "", cli.Exit(cli.ExitUsage, err)
		}
		st, err := s3tiles.New(s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = pathStyle }), bucket, prefix)
		if err != nil {
			return nil, "", cli.Usage(cmd, "--out %q: %v", out, err)
		}
		return st, st.String(), nil
	}
	if strings.Contains(out, "://") {
		return nil, "", cli.Usage(cmd, "--out %q: want s3://BUCKET[/PREFIX] or a directory", out)
	}
	if !filepath.IsAbs(out) {
		wd, err := a.deps.getwd()
		if err != nil {
			return nil, "", cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read the working directory: %v", err))
		}
		out = filepath.Join(wd, out)
	}
	return tiles.Dir(out), out, nil
}

// publishTiles publishes the tree of records at note to store. A log or a store that
// does not agree with the note, or an entry too large for a bundle, is exit 1.
func (a *app) publishTiles(cmd *cobra.Command, records []warrant.AuditRecord, store tiles.Store, vkey string, note []byte, rebuild bool) (checkpoint.TilesResult, error) {
	res, err := localapp.PublishTiles(cmd.Context(), recordLog(records), store, vkey, note, rebuild)
	if err != nil {
		code := cli.ExitUsage
		if errors.Is(err, checkpoint.ErrRewritten) || errors.Is(err, checkpoint.ErrUntrusted) || errors.Is(err, tiles.ErrEntryTooLarge) {
			code = cli.ExitFound
		}
		return res, cli.Exit(code, err)
	}
	return res, nil
}

// tilesLine says what a publication did, for people.
func tilesLine(where string, res checkpoint.TilesResult) string {
	if !res.Checkpoint {
		return fmt.Sprintf("tiles in %s are up to date (checkpoint of size %d)", where, max(res.Previous, res.Size))
	}
	return fmt.Sprintf("published tree %d to %s: %s, %s, checkpoint (was size %d)", res.Size, where,
		cli.Count(res.Tiles, "hash tile", ""), cli.Count(res.Bundles, "entry bundle", ""), res.Previous)
}

// tlogCmd is `toolwarrant tlog`: the audit log published for others to read.
func (a *app) tlogCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "tlog",
		Short: "Publish the audit log as a static transparency log (c2sp.org/tlog-tiles) monitors and mirrors read",
		Long: `The audit log's RFC 6962 tree, published as static files any web server or bucket serves: the
signed checkpoint, hash tiles and entry bundles of c2sp.org/tlog-tiles, read with HTTP GETs and
golang.org/x/mod/sumdb/tlog alone (docs/transparency-log.md, "Static tiles").` + exitCodes("success", ""),
		Example: "  toolwarrant tlog tiles --out /srv/www/toolwarrant-log",
		Args:    cli.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.tlogTilesCmd())
	return c
}

func (a *app) tlogTilesCmd() *cobra.Command {
	var out, export, checkpoints string
	var rebuild, asJSON, pathStyle bool
	var f tlogFlags
	c := &cobra.Command{
		Use:   "tiles",
		Short: "Write (or catch up) the audit log's c2sp.org/tlog-tiles: checkpoint, hash tiles, entry bundles",
		Long: `Publish the audit tree to --out (a directory, or s3://BUCKET[/PREFIX]) as c2sp.org/tlog-tiles:

  checkpoint               the C2SP checkpoint note (origin, size, root), signed by the checkpoint key
  tile/<L>/<N>[.p/<W>]     hash tiles: 256 hashes of level L (or W of them, for a checkpoint's size)
  tile/entries/<N>[.p/<W>] entry bundles: each entry's canonical body after its uint16 length

Entry i of the bundles is audit entry i+1's body; its RFC 6962 leaf hash is hash i of the
level-0 tiles. Only what the log gained since the checkpoint already in --out is written (full
tiles are never rewritten; partial ones are kept for readers of older checkpoints); --rebuild
computes every file from the log again and checks what is there.

The checkpoint is, by default, a new one of the whole log signed by the local checkpoint key,
after the log verifies under the log key and extends the last seen checkpoint, as 'audit
checkpoint' does (the checkpoint becomes the last seen one). With --checkpoints DIR|s3://BUCKET
it is the newest note there instead (no key needed: publish an AWS log from its export and its
checkpoint bucket). An entry over 65,535 bytes cannot be bundled: it is named, nothing past it
is published, and the exit code is 1. 'audit checkpoint' publishes tiles itself when
TOOLWARRANT_TILES_DIR (or --tiles) is set.` +
			exitCodes("the tiles are published and up to date", "the log does not verify, contradicts the checkpoint or the tiles already published, or holds an entry too large for a bundle"),
		Example: "  toolwarrant tlog tiles --out /srv/www/toolwarrant-log\n" +
			"  toolwarrant tlog tiles --export audit.jsonl --checkpoints s3://<CheckpointBucketName> --out s3://my-tlog/toolwarrant --vkey \"$VKEY\"",
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, st, err := a.logSettings(cmd, f)
			if err != nil {
				return err
			}
			if out == "" {
				out = cfg.TilesDir
			}
			if out == "" {
				return cli.Usage(cmd, "--out is required (or set TOOLWARRANT_TILES_DIR)")
			}
			store, where, err := a.tilesStore(cmd, out, pathStyle)
			if err != nil {
				return err
			}
			records, tree, err := a.readLog(cmd, cfg.Catalog, export)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if tree.Size() == 0 {
				return cli.Exit(cli.ExitUsage, errors.New("the log is empty: nothing to publish"))
			}
			var note []byte
			if checkpoints != "" {
				if st.vkey == "" {
					return cli.Exit(cli.ExitUsage, errors.New("--checkpoints needs the checkpoint verifier key: pass --vkey ('toolwarrant audit key --checkpoint' prints it)"))
				}
				src, err := a.source(cmd, checkpoints, pathStyle)
				if err != nil {
					return err
				}
				notes, err := checkpoint.LoadNotes(cmd.Context(), src, st.vkey, nil)
				if err != nil {
					return cli.Exit(cli.ExitFound, err)
				}
				var cp *checkpoint.Located
				for i := range notes {
					if notes[i].Size > tree.Size() {
						return cli.Exit(cli.ExitFound, fmt.Errorf("the log has %d entries, fewer than %s: entries were removed", tree.Size(), notes[i]))
					}
					cp = &notes[i]
				}
				if cp == nil {
					return cli.Exit(cli.ExitUsage, fmt.Errorf("%s holds no checkpoint note", src))
				}
				if p := checkpoint.CheckTree(tree, []checkpoint.Located{*cp}); len(p) > 0 {
					return cli.Exit(cli.ExitFound, fmt.Errorf("entry %d: %s", p[0].Seq, p[0].Reason))
				}
				note = cp.Bytes
			} else {
				if note, err = a.signWholeLog(cmd, cfg, st, records, tree); err != nil {
					return err
				}
			}
			res, err := a.publishTiles(cmd, records, store, st.vkey, note, rebuild)
			if err != nil {
				return err
			}
			if checkpoints == "" && st.configDir != "" {
				if n, err := checkpoint.OpenNote(note, st.vkey, nil); err == nil {
					if _, err := st.seen.Advance(n, st.vkey); err != nil {
						return cli.Exit(cli.ExitUsage, err)
					}
				}
			}
			if asJSON {
				return writeJSON(a.env.Stdout, map[string]any{"origin": st.origin, "vkey": st.vkey, "out": where, "size": res.Size, "previous": res.Previous,
					"tiles": res.Tiles, "bundles": res.Bundles, "checkpoint": res.Checkpoint, "read": res.Read})
			}
			fmt.Fprintln(a.env.Stdout, tilesLine(where, res))
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "publish to `DIR` or s3://BUCKET[/PREFIX] (env TOOLWARRANT_TILES_DIR)")
	c.Flags().StringVar(&export, "export", "", "publish this export `FILE` (JSON Lines) instead of the catalog")
	c.Flags().StringVar(&checkpoints, "checkpoints", "", "publish at the newest checkpoint note in `DIR` or s3://BUCKET instead of signing one")
	c.Flags().BoolVar(&rebuild, "rebuild", false, "compute every tile and bundle from the log again and check those already published")
	c.Flags().BoolVar(&pathStyle, "s3-path-style", false, "path-style S3 addressing for s3:// (moto, LocalStack)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: origin, vkey, out, size, previous, tiles, bundles, checkpoint, read")
	f.add(c, true)
	return c
}

// signWholeLog verifies the log under the log key and against the last seen checkpoint,
// then signs the checkpoint note of the whole tree with the checkpoint key (created on
// first use), as 'audit checkpoint' does.
func (a *app) signWholeLog(cmd *cobra.Command, cfg config.Toolwarrant, st *logState, records []warrant.AuditRecord, tree *audit.Tree) ([]byte, error) {
	key, err := localapp.LoadLogKey(cfg.LogKey)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("%v (to publish a log whose key is elsewhere, pass --checkpoints with its checkpoint notes)", err))
	}
	rep := audit.Verify(records, audit.Options{Keys: map[string]crypto.PublicKey{key.KeyID(): key.Public()}})
	if len(rep.Problems) > 0 {
		return nil, cli.Exit(cli.ExitFound, fmt.Errorf("the log does not verify (%s, the first at entry %d): run 'toolwarrant audit verify'", cli.Count(len(rep.Problems), "problem", ""), rep.Problems[0].Seq))
	}
	if st.vkey != "" && st.configDir != "" {
		if seen, err := st.seen.Load(st.vkey, nil); err == nil {
			if p := checkpoint.CheckTree(tree, []checkpoint.Located{seen}); len(p) > 0 {
				return nil, cli.Exit(cli.ExitFound, fmt.Errorf("entry %d: %s; nothing was signed", p[0].Seq, p[0].Reason))
			}
		} else if !errors.Is(err, checkpoint.ErrNotSeen) {
			return nil, cli.Exit(cli.ExitFound, err)
		}
	}
	nk, created, err := a.checkpointKey(st)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	if st.vkey, err = checkpoint.VerifierKey(st.origin, nk.Public()); err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	if created {
		fmt.Fprintf(a.env.Stderr, "created checkpoint key %s; its verifier key (publish it with the tiles):\n%s\n", st.keyPath, st.vkey)
	}
	note, err := checkpoint.SignNote(cmd.Context(), nk, st.origin, tree.Size(), rootOf(tree))
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	return note, nil
}
