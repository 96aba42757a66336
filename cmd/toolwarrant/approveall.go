package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/approvalsapi"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// approveAllLong is what approve --help adds about --all-pending.
const approveAllLong = `

With --all-pending (approve SERVER --all-pending), every routine first-sight tool of the
server is approved by one signed statement: the statement names the server, the exact list
of tools and digests it approves and the audit head they were read at, and each approval's
audit entry carries it. Routine means pending, never approved, crawled, graded new-tool and
nothing else (no findings, no suspicious text). Everything else pending on the server (a
change to an approved tool, a finding, hidden characters) is left for review one tool at a
time and listed. Nothing outside the list is approved: a tool crawled after the list was
read moves the audit head, and the statement is refused whole (read again, sign again).
A statement names at most 25 tools (one DynamoDB transaction); more are approved by
several statements, each over the head the last one left. --dry-run prints the list and
signs nothing. With --remote, the approvals API reads the list and records each
statement (POST /v1/servers/SERVER/bulk) with your AWS principal as the decider, as a
single approval there does; --sign-key, --agent and --ssh-key do not apply.`

// bulkJSON is what approve --all-pending reports (--json; docs/toolwarrant.md).
type bulkJSON struct {
	Server string `json:"server"`
	// DryRun is true when nothing was signed or recorded.
	DryRun bool `json:"dryRun"`
	// Approved are the tools approved (with --dry-run: that would be), by tool.
	Approved []warrant.BulkItem `json:"approved"`
	// Statements is the number of signed statements recorded (0 with --dry-run).
	Statements int    `json:"statements"`
	By         string `json:"by,omitempty"`
	// ReadHead is the audit head the list was read at; AuditHead the head after the
	// last approval (absent when nothing was recorded).
	ReadHead  warrant.AuditHead  `json:"readHead"`
	AuditHead *warrant.AuditHead `json:"auditHead,omitempty"`
	// Held are the pending tools left for review one at a time, with the reason.
	Held []heldJSON `json:"held"`
}

// heldJSON is a pending tool left for review one at a time: what the approvals API
// answers for it too.
type heldJSON = approvalsapi.BulkHeld

// approveAll is approve SERVER --all-pending.
func (a *app) approveAll(cmd *cobra.Command, sf *signingFlags, server, note string, dryRun, asJSON bool) error {
	if r, err := a.remote(cmd); err != nil {
		return err
	} else if r != nil {
		return a.remoteApproveAll(cmd, r, server, note, dryRun, asJSON)
	}
	ctx := cmd.Context()
	var att warrant.BulkAttester
	w, cfg, err := a.openWarrant(ctx, cmd, dryRun)
	if err != nil {
		return err
	}
	defer w.Close()
	if !dryRun {
		signer, err := sf.signer(cmd, cfg)
		if err != nil {
			return err
		}
		att = trust.SSHAttester{Signer: signer, Log: w.Catalog}
	}
	head, items, held, err := w.Service.BulkCandidates(ctx, server)
	if err != nil {
		return failed(fmt.Errorf("%w; 'toolwarrant server list' names the servers", err))
	}
	out := bulkJSON{Server: server, DryRun: dryRun, Approved: items, ReadHead: head, Held: approvalsapi.Held(held)}
	if out.Approved == nil {
		out.Approved = []warrant.BulkItem{}
	}
	if !dryRun && len(items) > 0 {
		err := approveChunks(&out, func(chunk []warrant.BulkItem, from warrant.AuditHead) (warrant.AuditHead, string, error) {
			res, err := w.Service.ApproveAllAs(ctx, warrant.BulkRequest{Server: server, Items: chunk, Note: note, ReadHead: &from}, att)
			if err != nil {
				return from, "", err
			}
			return res.AuditHead, res.Decisions[0].Actor, nil
		})
		if err != nil {
			return bulkFailed(err)
		}
	}
	if asJSON {
		return writeJSON(a.env.Stdout, out)
	}
	a.printBulk(out)
	return nil
}

// remoteApproveAll is approve SERVER --all-pending --remote: the list from GET
// /v1/servers/SERVER/bulk, then one POST per statement of at most warrant.MaxBulk tools,
// each over the head the last one left.
func (a *app) remoteApproveAll(cmd *cobra.Command, r *approvalsapi.Remote, server, note string, dryRun, asJSON bool) error {
	for _, f := range []string{"sign-key", "agent", "ssh-key"} {
		if cmd.Flags().Changed(f) {
			return cli.Usage(cmd, "--%s with --remote: the approvals API records your AWS principal as the decider; drop --%s", f, f)
		}
	}
	ctx := cmd.Context()
	cand, err := r.BulkCandidates(ctx, server)
	if err != nil {
		return remoteFailed(err)
	}
	out := bulkJSON{Server: server, DryRun: dryRun, Approved: cand.Items, ReadHead: cand.AuditHead, Held: cand.Held}
	if !dryRun && len(cand.Items) > 0 {
		err := approveChunks(&out, func(chunk []warrant.BulkItem, from warrant.AuditHead) (warrant.AuditHead, string, error) {
			res, err := r.ApproveAll(ctx, server, approvalsapi.BulkRequest{Items: chunk, AuditHead: &from, Note: note})
			if err != nil {
				return from, "", err
			}
			return res.AuditHead, res.By, nil
		})
		if err != nil {
			return remoteFailed(err)
		}
	}
	if asJSON {
		return writeJSON(a.env.Stdout, out)
	}
	a.printBulk(out)
	return nil
}

// approveChunks approves out.Approved through approve in statements of at most
// warrant.MaxBulk tools, each over the head the last one left (the first over
// out.ReadHead), and records the statements, the decider and the head after them in out.
// A failure after the first statement says how many tools were approved.
func approveChunks(out *bulkJSON, approve func(chunk []warrant.BulkItem, from warrant.AuditHead) (warrant.AuditHead, string, error)) error {
	from := out.ReadHead
	for start := 0; start < len(out.Approved); start += warrant.MaxBulk {
		chunk := out.Approved[start:min(start+warrant.MaxBulk, len(out.Approved))]
		next, by, err := approve(chunk, from)
		if err != nil {
			if out.Statements > 0 {
				err = fmt.Errorf("%w (the first %d tools were approved by %d statements; run again for the rest)", err, start, out.Statements)
			}
			return err
		}
		from = next
		out.Statements++
		out.By = by
	}
	out.AuditHead = &from
	return nil
}

// bulkFailed maps a refused bulk approval to exit 2 with what to do.
func bulkFailed(err error) error {
	switch {
	case errors.Is(err, warrant.ErrSeparation):
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%v; another person on the trust list must approve these, signing with their own key", err))
	case errors.Is(err, warrant.ErrSuspicious), errors.Is(err, warrant.ErrNotBulk):
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%s; nothing was recorded", visible(err.Error())))
	case errors.Is(err, warrant.ErrStale):
		return decisionFailed(err)
	}
	return untrusted(err, "there is no trust list: run 'toolwarrant trust init --ssh-key PUB' first",
		"key %s is not on the trust list, so it cannot approve (see 'toolwarrant trust list')")
}

func (a *app) printBulk(out bulkJSON) {
	o := a.env.Stdout
	switch {
	case len(out.Approved) == 0:
		fmt.Fprintf(o, "%s: no routine first-sight tool is pending; nothing recorded\n", out.Server)
	case out.DryRun:
		fmt.Fprintf(o, "would approve %d tools of %s in one signed statement over audit head %d (--dry-run: nothing signed):\n", len(out.Approved), out.Server, out.ReadHead.Seq)
	default:
		fmt.Fprintf(o, "approved %d tools of %s as %s in %d signed statement(s) (audit entries %d to %d):\n",
			len(out.Approved), out.Server, out.By, out.Statements, out.ReadHead.Seq+1, out.AuditHead.Seq)
	}
	tw := tabwriter.NewWriter(o, 0, 0, 2, ' ', 0)
	for _, it := range out.Approved {
		fmt.Fprintf(tw, "  %s\t%s\n", visible(it.Tool), it.Digest)
	}
	tw.Flush()
	if len(out.Held) > 0 {
		fmt.Fprintf(o, "left for review one at a time (%d):\n", len(out.Held))
		tw := tabwriter.NewWriter(o, 0, 0, 2, ' ', 0)
		for _, h := range out.Held {
			fmt.Fprintf(tw, "  %s\t%s\t%s\ttoolwarrant diff %s %s\n", visible(h.Tool), h.Grade, visible(h.Reason), out.Server, visible(h.Tool))
		}
		tw.Flush()
	}
	if out.AuditHead != nil {
		fmt.Fprintf(o, "audit head: %d:%s\n", out.AuditHead.Seq, out.AuditHead.Hash)
	}
}
