package main

import (
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/app/localapp"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/iamattest"
	"github.com/agentgate-dev/agentgate/internal/signer"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func (a *app) auditCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "audit",
		Short: "Export, verify, checkpoint and prove the signed audit log (a transparency log)",
		Long: `Every server added, crawl observed, version recorded and decision made is an entry of the
audit log, written in the same transaction as what it records: entry_hash = SHA-256(
prev_hash || JCS(body)), signed by the log key. The entry bodies are also the leaves of an
RFC 6962 Merkle tree whose signed C2SP checkpoints ('audit checkpoint') anchor 'audit
verify', prove one entry ('audit prove') and are cosigned by witnesses
(docs/transparency-log.md).` + exitCodes("success", ""),
		Example: "  toolwarrant audit verify --head 42:3f2a…\n  toolwarrant audit export > audit.jsonl",
		Args:    cli.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.auditExportCmd(), a.auditVerifyCmd(), a.auditKeyCmd(), a.auditStatementCmd(), a.auditCheckpointCmd(),
		a.auditProveCmd(), a.auditConsistencyCmd())
	return c
}

// eachRecord calls fn for every audit record of the catalog, in order, in pages.
func eachRecord(cmd *cobra.Command, cat warrant.Catalog, fn func(warrant.AuditRecord) error) error {
	var after int64
	for {
		recs, err := cat.AuditRecords(cmd.Context(), after, 1000)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if err := fn(r); err != nil {
				return err
			}
			after = r.Seq
		}
		if len(recs) < 1000 {
			return nil
		}
	}
}

func (a *app) auditExportCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "export",
		Short: "Write the audit log as JSON Lines, one entry per line, for offline verification",
		Long: `Write every audit entry, in order, as one JSON object per line: seq, type, actor, at,
prevHash, hash, keyId, signature (base64) and body (the canonical body the hash covers).
'toolwarrant audit verify --export FILE --log-pub PEM' verifies it without the catalog.

With --remote URL (or TOOLWARRANT_REMOTE) the entries come from the approvals API of a SAM
deployment (GET /v1/audit, page by page, each page checked to continue the sequence), for
'audit verify --export FILE --log-pub DER' against the KMS key and the S3 checkpoints.` + exitCodes("written", ""),
		Example: "  toolwarrant audit export > audit.jsonl\n  toolwarrant audit export --remote https://abc123.execute-api.eu-west-1.amazonaws.com > audit.jsonl",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := a.remote(cmd)
			if err != nil {
				return err
			}
			if r != nil {
				var progress func(int)
				if cli.IsTerminal(a.env.Stderr) {
					progress = func(n int) { fmt.Fprintf(a.env.Stderr, "\rexported %d entries", n) }
				}
				n, last, err := r.ExportAudit(cmd.Context(), a.env.Stdout, 0, progress)
				if progress != nil {
					fmt.Fprintln(a.env.Stderr)
				}
				if err != nil {
					return remoteFailed(fmt.Errorf("%w (%d entries were written, through seq %d)", err, n, last))
				}
				return nil
			}
			cat, _, _, err := a.open(cmd.Context(), cmd, true)
			if err != nil {
				return err
			}
			defer cat.Close()
			var batch []warrant.AuditRecord
			err = eachRecord(cmd, cat, func(r warrant.AuditRecord) error {
				batch = append(batch, r)
				if len(batch) == 1000 {
					err := audit.WriteExport(a.env.Stdout, batch)
					batch = batch[:0]
					return err
				}
				return nil
			})
			if err == nil {
				err = audit.WriteExport(a.env.Stdout, batch)
			}
			return failed(err)
		},
	}
	a.addRemoteFlag(c)
	return c
}

func (a *app) auditKeyCmd() *cobra.Command {
	var cpKey bool
	var pub string
	var f tlogFlags
	c := &cobra.Command{
		Use:   "key",
		Short: "Print the log key's ID and public key (PEM), or the checkpoint verifier key, to keep for offline verification",
		Long: `Print the log key's ID and its public key in PEM, for 'audit verify --log-pub'.

With --checkpoint, print the checkpoint verifier key instead (origin+hash+base64, the one
string a signed-note verifier needs, for --vkey and for witnesses): of the local checkpoint
key, or, with --pub FILE, of an Ed25519 public key (PEM, or the DER that 'aws kms
get-public-key' returns for the AWS checkpoint key) under --origin.` + exitCodes("printed", ""),
		Example: "  toolwarrant audit key > log-key.pub.pem\n  toolwarrant audit key --checkpoint\n  toolwarrant audit key --checkpoint --pub checkpoint-key.der --origin toolwarrant.aws/123456789012/eu-west-1/prod",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.settings(cmd)
			if err != nil {
				return err
			}
			if cpKey {
				return a.printVKey(cmd, cfg.Catalog, f, pub)
			}
			key, err := localapp.LoadLogKey(cfg.LogKey)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			der, err := x509.MarshalPKIXPublicKey(key.Public())
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			fmt.Fprintf(a.env.Stdout, "# key id %s\n", key.KeyID())
			return pem.Encode(a.env.Stdout, &pem.Block{Type: "PUBLIC KEY", Bytes: der})
		},
	}
	c.Flags().BoolVar(&cpKey, "checkpoint", false, "print the checkpoint verifier key instead of the log key")
	c.Flags().StringVar(&pub, "pub", "", "with --checkpoint: the Ed25519 public key `FILE` (PEM or DER) to print the verifier key of")
	f.add(c, true)
	return c
}

// parseHead reads SEQ:HASH.
// isHash reports whether s is 64 hex digits, an entry hash as commands print it.
func isHash(s string) bool {
	return len(s) == 64 && strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

func parseHead(s string) (*warrant.AuditHead, error) {
	seq, hash, ok := strings.Cut(strings.TrimSpace(s), ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || err != nil || n < 1 || !isHash(hash) {
		return nil, fmt.Errorf("--head %q must be SEQ:HASH, such as 42:3f2a… (64 hex digits), as printed by a command that wrote to the log", s)
	}
	return &warrant.AuditHead{Seq: n, Hash: strings.ToLower(hash)}, nil
}

func readPublicKeys(path string) (map[string]crypto.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	raw := b
	keys := map[string]crypto.PublicKey{}
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "PUBLIC KEY" {
			continue
		}
		pub, err := signer.ParsePublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		id, _ := signer.KeyIDOf(pub)
		keys[id] = pub
	}
	if len(keys) == 0 {
		// Not PEM: a DER SubjectPublicKeyInfo, as 'aws kms get-public-key' returns (base64 -d).
		pub, err := signer.ParsePublicKey(raw)
		if err != nil {
			return nil, fmt.Errorf("%s holds no PEM PUBLIC KEY and is not a DER public key", path)
		}
		id, _ := signer.KeyIDOf(pub)
		keys[id] = pub
	}
	return keys, nil
}

func (a *app) auditVerifyCmd() *cobra.Command {
	var export, logPub, head, trustRoot, checkpoints, crawlRole, policyFile string
	var asJSON, pathStyle bool
	var witnessKeys []string
	var quorum int
	var f tlogFlags
	c := &cobra.Command{
		Use:   "verify",
		Short: "Recompute every entry's hash and signature; catch altered, removed or reordered entries",
		Long: `Recompute every audit entry's hash and check its log signature, from the catalog (opened
read-only) or from an export (--export FILE), and every person's signature on a decision
or trust change against the trust list as it stood at that point of the chain. Every
problem is reported with the sequence number of the entry it is at.

Someone who holds the database and the log key can rewrite the history and sign it again
so that it is consistent on its own. Keep the head (SEQ:HASH) and the trust root that
commands print outside the database, and pass them: --head checks that the log still holds
that entry with that hash, --trust-root that the trust list was initialised by that entry.

--checkpoints DIR or s3://BUCKET[/PREFIX] also checks the log against every signed checkpoint
(written by 'toolwarrant audit checkpoint' or the AWS checkpoint function): a history
rewritten or truncated after a checkpoint fails even when it was re-signed with the log key.
--crawl-role ARN checks decisions attested by an IAM principal (the AWS approvals API) and
refuses any attested by that crawl role.

The entry bodies are the leaves of an RFC 6962 tree. With no flag, the log is also checked
against the last checkpoint this user has seen (kept in the configuration directory, not in
the catalog: TOOLWARRANT_CONFIG_DIR, else ~/.config/toolwarrant): its tree must extend that
checkpoint's, so entries removed or rewritten and re-signed after it fail, naming it. A
verification that passes moves the last seen checkpoint forward to the newest checkpoint
note of --checkpoints. --witness-key K (repeated) with --quorum N requires N of those
witnesses' cosignatures on the newest checkpoint. --policy FILE says the same in a
c2sp.org/tlog-policy file (the log's key, the witnesses' keys, a quorum: k of n, in groups)
instead of --vkey, --witness-key and --quorum.

The log's public key comes from --log-pub (PEM, or DER as 'aws kms get-public-key' returns
it; see 'toolwarrant audit key'), else from the log key file.` + exitCodes("the log verified", "problems were found (listed, with entry numbers)"),
		Example: "  toolwarrant audit verify\n  toolwarrant audit verify --export audit.jsonl --log-pub log-key.pub.pem --head 42:3f2a9c…\n  toolwarrant audit verify --checkpoints /mnt/worm/checkpoints --policy toolwarrant.policy",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := a.settings(cmd)
			if err != nil {
				return err
			}
			var st trust.State
			opts := audit.Options{TrustRoot: strings.ToLower(strings.TrimSpace(trustRoot)), Check: st.Step}
			if opts.TrustRoot != "" && !isHash(opts.TrustRoot) {
				// A typo is not evidence of a rewritten history.
				return cli.Usage(cmd, "--trust-root %q is not a trust root: give the 64 hex digits 'toolwarrant trust init' printed (or 'toolwarrant trust list' shows)", trustRoot)
			}
			if crawlRole != "" {
				opts.Check = iamattest.Checker(st.Step, crawlRole)
			}
			if head != "" {
				if opts.Head, err = parseHead(head); err != nil {
					return cli.Usage(cmd, "%v", err)
				}
			}
			if logPub != "" {
				if opts.Keys, err = readPublicKeys(logPub); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
			} else {
				key, err := localapp.LoadLogKey(cfg.LogKey)
				if err != nil {
					return cli.Exit(cli.ExitUsage, fmt.Errorf("%v (or pass --log-pub with the log's public key)", err))
				}
				opts.Keys = map[string]crypto.PublicKey{key.KeyID(): key.Public()}
			}
			var tv treeVerify
			if policyFile != "" {
				if tv, err = a.policyTreeVerify(cmd, cfg.Catalog, f, policyFile); err != nil {
					return err
				}
			} else {
				ls, err := a.state(cmd, cfg.Catalog, f)
				if err != nil {
					return err
				}
				wits, err := witnessVerifiers(witnessKeys)
				if err != nil {
					return cli.Usage(cmd, "--witness-key: %v", err)
				}
				if quorum == 0 && len(wits) > 0 {
					quorum = 1
				}
				if quorum > len(wits) || quorum < 0 {
					return cli.Usage(cmd, "--quorum %d needs at least that many --witness-key", quorum)
				}
				tv = treeVerify{st: ls, witnesses: wits, quorum: quorum}
			}
			if checkpoints != "" {
				return a.verifyCheckpoints(cmd, cfg.Catalog, export, checkpoints, pathStyle, opts, asJSON, tv)
			}
			v := audit.NewVerifier(opts)
			tree := &audit.Tree{}
			if export != "" {
				f, err := os.Open(export)
				if err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
				defer f.Close()
				recs, err := audit.ParseExport(io.Reader(f))
				if err != nil {
					return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %v", export, err))
				}
				for _, r := range recs {
					v.Add(r)
					if err := tree.Append(r.Body); err != nil {
						return cli.Exit(cli.ExitUsage, err)
					}
				}
			} else {
				cat, err := openAuditLog(cmd.Context(), cfg.Catalog)
				if err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
				defer cat.Close()
				if err := eachRecord(cmd, cat, func(r warrant.AuditRecord) error { v.Add(r); return tree.Append(r.Body) }); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
				stored, err := cat.AuditHead(cmd.Context())
				if err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
				rep := v.Finish()
				if stored != rep.Head {
					rep.Problems = append(rep.Problems, audit.Problem{Seq: stored.Seq, Reason: fmt.Sprintf("the stored head (%d) is not the last entry (%d)", stored.Seq, rep.Head.Seq)})
				}
				if rep, err = a.anchorReport(cmd, tv, tree, nil, rep, asJSON); err != nil {
					return err
				}
				return a.report(rep, v.TrustRoot(), asJSON)
			}
			rep, err := a.anchorReport(cmd, tv, tree, nil, v.Finish(), asJSON)
			if err != nil {
				return err
			}
			return a.report(rep, v.TrustRoot(), asJSON)
		},
	}
	c.Flags().StringArrayVar(&witnessKeys, "witness-key", nil, "a witness's verifier `KEY` (cosignature/v1 or Ed25519 note key); repeat for several")
	c.Flags().IntVar(&quorum, "quorum", 0, "how many of the --witness-key witnesses must have cosigned the newest checkpoint (default 1 when any is given)")
	c.Flags().StringVar(&policyFile, "policy", "", policyFlagUsage)
	f.add(c, false)
	c.Flags().StringVar(&export, "export", "", "verify this export `FILE` (JSON Lines) instead of the catalog")
	c.Flags().StringVar(&logPub, "log-pub", "", "the log's public key(s), PEM `FILE` (default: from the log key file)")
	c.Flags().StringVar(&head, "head", "", "a head you kept, `SEQ:HASH`: the log must still hold that entry with that hash")
	c.Flags().StringVar(&trustRoot, "trust-root", "", "the trust root you kept (`HASH`): the log's trust list must start at that entry")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: entries, head, trustRoot, problems")
	c.Flags().StringVar(&checkpoints, "checkpoints", "", "also verify against the signed checkpoints in `DIR` or s3://BUCKET[/PREFIX]")
	c.Flags().BoolVar(&pathStyle, "s3-path-style", false, "path-style S3 addressing for --checkpoints s3:// (moto, LocalStack)")
	c.Flags().StringVar(&crawlRole, "crawl-role", "", "check IAM-attested decisions; a decision attested by this crawl role `ARN` is a problem")
	return c
}

func (a *app) report(rep audit.Report, root string, asJSON bool) error {
	if asJSON {
		out := map[string]any{"entries": rep.Entries, "head": rep.Head, "trustRoot": root, "problems": rep.Problems}
		if rep.Tree != nil {
			out["tree"], out["checkpoints"] = rep.Tree, rep.Checkpoints
		}
		if err := writeJSON(a.env.Stdout, out); err != nil {
			return err
		}
	} else if rep.OK() {
		fmt.Fprintf(a.env.Stdout, "ok: %s verified, head %d:%s\n", count(rep.Entries, "entry"), rep.Head.Seq, rep.Head.Hash)
	} else {
		for _, p := range rep.Problems {
			fmt.Fprintf(a.env.Stdout, "entry %d: %s\n", p.Seq, visible(p.Reason))
		}
		fmt.Fprintf(a.env.Stdout, "FAILED: %s in %s\n", count(len(rep.Problems), "problem"), count(rep.Entries, "entry"))
	}
	if !rep.OK() {
		return cli.Found()
	}
	return nil
}

func (a *app) auditStatementCmd() *cobra.Command {
	var out string
	c := &cobra.Command{
		Use:   "statement SEQ --out DIR",
		Short: "Export the signed statement of a decision, to check it with ssh-keygen -Y verify",
		Long: `Write the statement a person signed for audit entry SEQ (a decision or a trust change), its
SSH signature and the trust list of that point as an allowed_signers file into DIR, and print
the ssh-keygen command that verifies them without toolwarrant.` + exitCodes("written", ""),
		Example: "  toolwarrant audit statement 12 --out /tmp/approval-12",
		Args:    cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || seq < 1 || out == "" {
				return cli.Usage(cmd, "give an entry number and --out DIR")
			}
			cat, _, _, err := a.open(cmd.Context(), cmd, true)
			if err != nil {
				return err
			}
			defer cat.Close()
			var st trust.State
			var found *warrant.AuditRecord
			var list trust.List
			err = eachRecord(cmd, cat, func(r warrant.AuditRecord) error {
				if r.Seq > seq || found != nil {
					return nil
				}
				var body struct {
					Event json.RawMessage `json:"event"`
				}
				_ = json.Unmarshal(r.Body, &body)
				if r.Seq == seq {
					rc := r
					found = &rc
					if st.List != nil {
						list = *st.List
					}
					var ev struct {
						Statement json.RawMessage `json:"statement"`
						Signature string          `json:"signature"`
					}
					err := json.Unmarshal(body.Event, &ev)
					var byPolicy trust.DecisionEvent
					if r.Type == string(warrant.DecisionApproved) && json.Unmarshal(body.Event, &byPolicy) == nil && byPolicy.Policy != nil {
						// An approval by a review policy: the person's signature is the policy's.
						pa := byPolicy.Policy
						if ap, ok := st.Policies[pa.Digest]; ok {
							return fmt.Errorf("audit entry %d was approved by review policy %s (%s), signed by %s in entry %d: run 'toolwarrant audit statement %d --out DIR'",
								seq, visible(pa.Name), pa.Digest.Short(), visible(ap.Signer), ap.Entry, ap.Entry)
						}
						return fmt.Errorf("audit entry %d names review policy %s, which is not active at that point (run 'toolwarrant audit verify')", seq, visible(pa.Name))
					}
					if err != nil || len(ev.Statement) == 0 {
						return fmt.Errorf("audit entry %d (%s) carries no signed statement", seq, r.Type)
					}
					s, err := trust.ParseStatement(ev.Statement)
					if err != nil {
						return err
					}
					ns := trust.NamespaceApproval
					if s.Type == trust.TypeTrust {
						ns = trust.NamespaceTrust
					}
					if err := os.MkdirAll(out, 0o700); err != nil {
						return err
					}
					files := map[string][]byte{"statement.json": ev.Statement, "statement.sig": []byte(ev.Signature), "allowed_signers": []byte(list.AllowedSigners(ns))}
					for name, b := range files {
						if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
							return err
						}
					}
					fmt.Fprintf(a.env.Stdout, "ssh-keygen -Y verify -f %s -I %s -n %s -s %s < %s\n",
						filepath.Join(out, "allowed_signers"), s.Signer, ns, filepath.Join(out, "statement.sig"), filepath.Join(out, "statement.json"))
					return nil
				}
				st.Step(r, body.Event)
				return nil
			})
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if found == nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("there is no audit entry %d", seq))
			}
			return nil
		},
	}
	c.Flags().StringVar(&out, "out", "", "the `DIR` to write statement.json, statement.sig and allowed_signers into")
	return c
}
