package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/approvalsapi"
	"github.com/agentgate-dev/agentgate/internal/audit"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/review"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func (a *app) reviewCmd() *cobra.Command {
	var addr, out string
	var sf signingFlags
	c := &cobra.Command{
		Use:   "review [--sign-key FILE | --agent | --remote URL] [--addr 127.0.0.1:0] [--out FILE]",
		Short: "A local web page to read every pending and drifted tool and approve exactly what you read",
		Long: `Serve a web page on a loopback address, and print its URL: every pending and drifted tool,
per server, with the graded diff against the approved version (else the previous one), the
schema diff as a tree, annotation flips called out, the exact canonical definition, every
hidden or reordering character as a badge with its code point (and the ASCII a run of tag
characters spells), look-alike names letter by letter with each letter's script, and the
full digest with a copy button.

Approve, reject and roll back from the page: with --sign-key FILE or --agent the decision
is signed with your SSH key, through the same decision use case as 'toolwarrant approve';
with --remote URL (or TOOLWARRANT_REMOTE) it goes to the approvals API of a SAM deployment,
SigV4-signed with your AWS credentials. The statement names the digest shown and the audit
head the page was rendered from; if the catalog moved on since, nothing is signed and the
page comes back (409) with what changed. Suspicious text needs the acceptance the page
asks for, recorded as with --accept-suspicious. Without a signer the page is read-only.

The page listens on loopback only. The printed URL carries a random per-run token, which
the page turns into a SameSite=Strict cookie; every decision is a POST carrying the page's
CSRF token from the page's own Origin. The page works with JavaScript disabled, loads
nothing from elsewhere, and never shows header values or keys. Stop it with Ctrl-C.

--out FILE writes the same view, read-only, as one self-contained HTML file (for a pull
request) and exits.` + remoteNote + exitCodes("the page was served until interrupted, or the report written", ""),
		Example: "  toolwarrant review --sign-key ~/.ssh/id_ed25519\n  toolwarrant review --out report.html",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			src, where, decider, done, err := a.reviewSource(cmd, &sf, out != "")
			if err != nil {
				return err
			}
			defer done()
			if out != "" {
				return a.writeReport(ctx, src, where, out)
			}
			ln, err := review.Listen(addr)
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			logger := slog.New(slog.NewTextHandler(a.env.Stderr, nil))
			h, err := review.New(review.Config{Source: src, Addr: ln.Addr().String(), Decider: decider, Where: where, Logger: logger, Now: a.deps.now})
			if err != nil {
				ln.Close()
				return cli.Exit(cli.ExitUsage, err)
			}
			fmt.Fprintln(a.env.Stdout, h.URL())
			if decider == "" {
				fmt.Fprintln(a.env.Stderr, "toolwarrant: read-only: pass --sign-key FILE, --agent or --remote URL to decide from the page")
			}
			fmt.Fprintf(a.env.Stderr, "toolwarrant: serving the review page on %s until interrupted; open the URL above (it carries this run's token)\n", ln.Addr())
			if err := review.Serve(ctx, ln, h); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen on this loopback `ADDRESS` (port 0: any free port)")
	c.Flags().StringVar(&out, "out", "", "write the page as one self-contained HTML `FILE` (read-only) and exit")
	sf.add(c)
	a.addRemoteFlag(c)
	return c
}

// reviewSource opens what the page reads and decides through: the approvals API with
// --remote, else the catalog, with the SSH signer when one is given. done closes it.
func (a *app) reviewSource(cmd *cobra.Command, sf *signingFlags, export bool) (src review.Source, where, decider string, done func(), err error) {
	ctx := cmd.Context()
	done = func() {}
	if a.remoteURL(cmd) != "" {
		for _, f := range []string{"sign-key", "agent", "ssh-key"} {
			if cmd.Flags().Changed(f) {
				return nil, "", "", done, cli.Usage(cmd, "--%s with --remote: the approvals API records your AWS principal as the decider; drop --%s", f, f)
			}
		}
	}
	r, err := a.remote(cmd)
	if err != nil {
		return nil, "", "", done, err
	}
	if r != nil {
		if !export {
			decider = "your AWS principal (requests to the approvals API are SigV4-signed with your AWS credentials)"
		}
		return remoteSource{r}, "the approvals API at " + a.remoteURL(cmd), decider, done, nil
	}
	if export || (sf.key == "" && !sf.agent) {
		w, cfg, err := a.openWarrant(ctx, cmd, true)
		if err != nil {
			return nil, "", "", done, err
		}
		return review.ServiceSource{Service: w.Service}, "the catalog " + cfg.Catalog, "", func() { w.Close() }, nil
	}
	w, signer, err := a.openSigning(ctx, cmd, sf)
	if err != nil {
		return nil, "", "", done, err
	}
	fp := signer.Public().Fingerprint()
	decider = "SSH key " + fp + " (not on the trust list: decisions will be refused)"
	if st, _, err := trust.Load(ctx, w.Catalog); err == nil {
		if k, err := st.Trusted(fp); err == nil {
			decider = k.Principal + ", SSH key " + fp
		} else {
			fmt.Fprintf(a.env.Stderr, "toolwarrant: %v: the page will show it, but decisions will be refused\n", err)
		}
	}
	cfg, _ := a.settings(cmd)
	return review.ServiceSource{Service: w.Service, Attester: trust.SSHAttester{Signer: signer, Log: w.Catalog}},
		"the catalog " + cfg.Catalog, decider, func() { w.Close() }, nil
}

// writeReport writes the static report to path (through a temporary file in the same
// directory, so a reader never sees half of it).
func (a *app) writeReport(ctx context.Context, src review.Source, where, path string) error {
	var buf bytes.Buffer
	p, err := review.WriteReport(ctx, &buf, src, where, a.deps.now())
	if err != nil {
		return failed(err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".toolwarrant-review-*")
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return cli.Exit(cli.ExitUsage, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return cli.Exit(cli.ExitUsage, err)
	}
	if err := tmp.Close(); err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	fmt.Fprintf(a.env.Stdout, "wrote %s: %s to review, rendered from audit head %d:%s\n", path, count(len(p.Cards), "tool"), p.Head.Seq, p.Head.Hash)
	return nil
}

// remoteSource is the page's source over the approvals API: the Lambda behind it decides
// through warrant.Service.DecideAs with the caller's IAM principal.
type remoteSource struct{ r *approvalsapi.Remote }

var _ review.Source = remoteSource{}

func (s remoteSource) Tools(ctx context.Context) (warrant.AuditHead, []warrant.ToolRow, error) {
	return s.r.Tools(ctx, false)
}

func (s remoteSource) Diff(ctx context.Context, server, tool string) (warrant.AuditHead, warrant.DiffView, error) {
	d, err := s.r.Diff(ctx, server, tool, "", "")
	return d.AuditHead, d.View(), err
}

// RollbackTargets: the approvals API has no route listing a tool's earlier approvals, so
// the page offers none ('toolwarrant rollback --remote' does it).
func (remoteSource) RollbackTargets(context.Context, string, string, warrant.Digest) ([]warrant.Digest, error) {
	return nil, nil
}

// errEnough stops an audit export once it has more than the page lists.
var errEnough = errors.New("enough")

type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if c.Len() >= c.max {
		return 0, errEnough
	}
	return c.Buffer.Write(p)
}

func (s remoteSource) Since(ctx context.Context, after int64, limit int) ([]warrant.AuditRecord, error) {
	buf := &capped{max: 1 << 20}
	if _, _, err := s.r.ExportAudit(ctx, buf, after, nil); err != nil && !errors.Is(err, errEnough) {
		return nil, err
	}
	recs, err := audit.ParseExport(io.Reader(&buf.Buffer))
	if len(recs) > limit {
		recs = recs[:limit]
	}
	return recs, err
}

func (s remoteSource) Decide(ctx context.Context, req warrant.DecisionRequest) (review.Outcome, error) {
	ans, err := s.r.Decide(ctx, req.Server, req.Tool, approvalsapi.DecisionRequest{Decision: req.Kind, Digest: req.Digest, AuditHead: req.ReadHead,
		AcceptSuspicious: req.AcceptSuspicious, Note: req.Note})
	if errors.Is(err, approvalsapi.ErrUnreachable) {
		return review.Outcome{}, fmt.Errorf("%w: %v: the answer was lost, so the decision may have been recorded: reload the page before deciding again", warrant.ErrUnavailable, err)
	}
	if err != nil {
		return review.Outcome{}, err
	}
	out := review.Outcome{Decider: ans.By, Unchanged: ans.Unchanged}
	if ans.AuditHead != nil {
		out.Head = *ans.AuditHead
	}
	return out, nil
}
