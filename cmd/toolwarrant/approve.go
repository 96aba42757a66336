package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func (a *app) decideCmd(kind warrant.DecisionKind) *cobra.Command {
	var digest, note string
	var accept, asJSON, allPending, dryRun bool
	var sf signingFlags
	use, flag, short, long := "approve SERVER (TOOL --hash DIGEST | --all-pending)", "hash", "", ""
	switch kind {
	case warrant.DecisionApproved:
		short = "Approve one exact digest of a tool, signed with your SSH key"
		long = `Approve one exact version of a tool: DIGEST becomes the tool's one approved digest. The
statement you sign names the server, the tool, the digest, the decision and the audit head
you read; it is recorded, with your signature, in the same transaction as the approval.

DIGEST is the full digest or a unique prefix of at least 8 hex digits (the 12 that 'list'
prints will do); it is resolved among the tool's recorded versions, and the statement you
sign names the full digest, which is printed.

Refused: a digest that is not a recorded version of the tool; a key not on the trust list;
an approver whose identity crawled that digest (separation of duties: crawl as another
identity); a version with suspicious text unless --accept-suspicious (recorded); and a log
that moved on since you read it (read again and sign again).

With --remote URL (or TOOLWARRANT_REMOTE) the decision is recorded by the approvals API of a
SAM deployment instead: the request is SigV4-signed with your AWS credentials, the API
records your IAM principal as the approver (no SSH key), and the same rules apply there.
Your role needs the stack's ApproverPolicyArn.`
	case warrant.DecisionRejected:
		use = "reject SERVER TOOL --hash DIGEST"
		short = "Reject one exact digest of a tool (if it was approved, the tool has none)"
		long = "Reject one exact version of a tool, signed like approve. Rejecting the approved digest leaves the tool with no approved digest."
	case warrant.DecisionRolledBack:
		use, flag = "rollback SERVER TOOL --to DIGEST", "to"
		short = "Make an earlier approved digest the approved one again"
		long = "Roll a tool back to a digest that was approved before, signed like approve."
	}
	if kind == warrant.DecisionApproved {
		long += approveAllLong
	}
	c := &cobra.Command{
		Use:     use + " (--sign-key FILE | --agent | --remote URL)",
		Short:   short,
		Long:    long + exitCodes("recorded", "") + "\n     (2 also for every refusal above; the reason is printed)",
		Example: fmt.Sprintf("  toolwarrant %[1]s weather get_forecast --%[2]s sha256:3f2a9c1d0b7e --sign-key ~/.ssh/id_ed25519\n  toolwarrant %[1]s weather get_forecast --%[2]s sha256:3f2a… --remote https://abc123.execute-api.eu-west-1.amazonaws.com", kind2cmd(kind), flag),
		Args: func(cmd *cobra.Command, args []string) error {
			if allPending {
				return cli.ExactArgs(1)(cmd, args)
			}
			return cli.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if allPending {
				if cmd.Flags().Changed(flag) || accept {
					return cli.Usage(cmd, "--all-pending approves the listed digests of routine first-sight tools: give no --%s and no --accept-suspicious", flag)
				}
				return a.approveAll(cmd, &sf, args[0], note, dryRun, asJSON)
			}
			if dryRun {
				return cli.Usage(cmd, "--dry-run goes with --all-pending")
			}
			server, tool := args[0], args[1]
			if !cmd.Flags().Changed(flag) {
				return cli.Usage(cmd, "--%s DIGEST is required: the digest you read and decide on (the 12 hex digits 'toolwarrant list' prints will do)", flag)
			}
			if err := checkDigestArg(digest); err != nil {
				return cli.Usage(cmd, "--%s: %v", flag, err)
			}
			r, err := a.remote(cmd)
			if err != nil {
				return err
			}
			if r != nil {
				out, err := a.remoteDecide(cmd, r, kind, server, tool, digest, accept, note)
				if err != nil {
					return err
				}
				return a.printDecision(out, asJSON)
			}
			ctx := cmd.Context()
			w, signer, err := a.openSigning(ctx, cmd, &sf)
			if err != nil {
				return err
			}
			defer w.Close()
			d, err := resolveDigest(ctx, w.Service, server, tool, digest)
			if err != nil {
				return failed(err)
			}
			res, err := w.Service.DecideAs(ctx, warrant.DecisionRequest{Server: server, Tool: tool, Digest: d, Kind: kind, AcceptSuspicious: accept, Note: note},
				trust.SSHAttester{Signer: signer, Log: w.Catalog})
			switch {
			case errors.Is(err, warrant.ErrSuspicious):
				return cli.Exit(cli.ExitUsage, fmt.Errorf("%s; read it with 'toolwarrant show', and pass --accept-suspicious to %s it anyway (recorded)", visible(err.Error()), kind2cmd(kind)))
			case errors.Is(err, warrant.ErrSeparation):
				return cli.Exit(cli.ExitUsage, fmt.Errorf("%v; another person on the trust list must %s it, signing with their own key", err, kind2cmd(kind)))
			case errors.Is(err, warrant.ErrStale):
				return decisionFailed(err)
			case err != nil:
				return untrusted(err, "there is no trust list: run 'toolwarrant trust init --ssh-key PUB' first",
					"key %s is not on the trust list, so it cannot decide (see 'toolwarrant trust list')")
			}
			out := decisionJSON{Server: server, Tool: tool, Decision: kind, Digest: d, Unchanged: res.Unchanged}
			if !res.Unchanged {
				out.By, out.AuditHead = res.Decision.Actor, &res.AuditHead
			}
			return a.printDecision(out, asJSON)
		},
	}
	c.Flags().StringVar(&digest, flag, "", "the `DIGEST`: sha256:… with all 64 hex digits, or a unique prefix of at least 8 (as 'list' prints it); the statement names the full digest")
	c.Flags().BoolVar(&accept, "accept-suspicious", false, "decide although the version has suspicious text (recorded in the signed statement)")
	c.Flags().StringVar(&note, "note", "", "a note recorded with the decision")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: server, tool, decision, digest, unchanged, by, auditHead (docs/toolwarrant.md)")
	if kind == warrant.DecisionApproved {
		c.Flags().BoolVar(&allPending, "all-pending", false, "approve SERVER's routine first-sight tools (graded new-tool, nothing else) with one signed statement over their exact digests")
		c.Flags().BoolVar(&dryRun, "dry-run", false, "with --all-pending: print what would be approved and what is left for review, sign nothing")
		c.Example += "\n  toolwarrant approve everything --all-pending --dry-run\n  toolwarrant approve everything --all-pending --sign-key ~/.ssh/id_ed25519"
	}
	sf.add(c)
	a.addRemoteFlag(c)
	return c
}

// decisionJSON is what approve, reject and rollback report (--json; docs/toolwarrant.md).
type decisionJSON struct {
	Server   string               `json:"server"`
	Tool     string               `json:"tool"`
	Decision warrant.DecisionKind `json:"decision"`
	Digest   warrant.Digest       `json:"digest"`
	// Unchanged is true when the digest already was the approved one: nothing recorded.
	Unchanged bool `json:"unchanged"`
	// By is the decider as recorded; AuditHead the audit entry of the decision (both
	// absent when Unchanged).
	By        string             `json:"by,omitempty"`
	AuditHead *warrant.AuditHead `json:"auditHead,omitempty"`
}

// printDecision prints what a decision recorded, as text or as JSON.
func (a *app) printDecision(d decisionJSON, asJSON bool) error {
	if asJSON {
		return writeJSON(a.env.Stdout, d)
	}
	if d.Unchanged {
		fmt.Fprintf(a.env.Stdout, "%s %s: %s is already the approved digest; nothing recorded\n", d.Server, visible(d.Tool), d.Digest)
		return nil
	}
	h := d.AuditHead
	fmt.Fprintf(a.env.Stdout, "%s %s %s %s as %s (audit entry %d)\naudit head: %d:%s\n", d.Decision, d.Server, visible(d.Tool), d.Digest, d.By, h.Seq, h.Seq, h.Hash)
	return nil
}

// checkDigestArg refuses what can be neither a digest nor a digest prefix: "sha256:"
// (optional) and 8 to 64 hex digits.
func checkDigestArg(s string) error {
	h := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), warrant.DigestPrefix)
	if len(h) < 8 || len(h) > 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return fmt.Errorf("%q is not a digest or a prefix of one: give sha256: and at least 8 of its hex digits (toolwarrant list shows 12)", s)
	}
	return nil
}

// resolveDigest returns the full digest that arg (checked by checkDigestArg) names among
// the recorded versions of the tool. A full digest is returned as it is: the decision use
// case says whether it is a recorded version.
func resolveDigest(ctx context.Context, svc *warrant.Service, server, tool, arg string) (warrant.Digest, error) {
	if d, err := warrant.ParseDigest(arg); err == nil {
		return d, nil
	}
	v, err := svc.Show(ctx, server, tool, arg)
	if err != nil {
		// Unknown server or tool, no version with that prefix, or more than one.
		return "", fmt.Errorf("%w; 'toolwarrant list --json' shows the full digests", err)
	}
	return v.Version.Digest, nil
}

func kind2cmd(k warrant.DecisionKind) string {
	switch k {
	case warrant.DecisionRejected:
		return "reject"
	case warrant.DecisionRolledBack:
		return "rollback"
	}
	return "approve"
}
