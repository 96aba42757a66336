package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/app/awsbase"
	"github.com/agentgate-dev/agentgate/internal/approvalsapi"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// The --remote paths: the same commands against the approvals API of a SAM deployment
// (the stack's ApprovalsApiUrl output), every request SigV4-signed with the operator's
// AWS credentials. The API names the caller's IAM principal as the decider.

const remoteHelp = "use the approvals API at `URL` (the stack's ApprovalsApiUrl output; env TOOLWARRANT_REMOTE) instead of the catalog file, signing with your AWS credentials"

// remoteNote is appended to the help of every command that takes --remote.
const remoteNote = `

With --remote URL (or TOOLWARRANT_REMOTE) it reads the approvals API of a SAM deployment
instead of the catalog file: requests are signed with SigV4 from your AWS credentials
(AWS_PROFILE, aws sso login, AWS_ACCESS_KEY_ID), and your role needs the stack's
ApproverPolicyArn (or AuditorPolicyArn, for reads only).`

func (a *app) addRemoteFlag(c *cobra.Command) {
	c.Flags().StringVar(&a.flagRemote, "remote", "", remoteHelp)
}

// remoteURL is --remote, else TOOLWARRANT_REMOTE, else "" (the local catalog).
func (a *app) remoteURL(cmd *cobra.Command) string {
	if cmd.Flags().Changed("remote") {
		return strings.TrimSpace(a.flagRemote)
	}
	cfg, err := config.LoadToolwarrant(a.env.Getenv)
	if err != nil {
		return ""
	}
	return cfg.Remote
}

// remote returns the approvals API client, or nil when no remote is configured.
func (a *app) remote(cmd *cobra.Command) (*approvalsapi.Remote, error) {
	u := a.remoteURL(cmd)
	if u == "" {
		if cmd.Flags().Changed("remote") {
			return nil, cli.Usage(cmd, "--remote needs the approvals API URL")
		}
		return nil, nil
	}
	awsCfg, err := awsbase.AWSConfig(cmd.Context(), config.AWS{MaxAttempts: 3})
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	r, err := approvalsapi.NewRemote(awsCfg, u)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, err)
	}
	return r, nil
}

// remoteFailed maps an approvals API failure to exit 2 with what to do about it.
func remoteFailed(err error) error {
	var re *approvalsapi.RemoteError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re) && (re.Status == 401 || re.Status == 403) && !re.ByFunction:
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%v: check your AWS credentials ('aws sts get-caller-identity') and that your role has the stack's ApproverPolicyArn (AuditorPolicyArn for reads)", err))
	case errors.Is(err, warrant.ErrConflict):
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%v; nothing was recorded: re-read ('toolwarrant list --remote', 'toolwarrant diff --remote') and decide again", err))
	case errors.Is(err, approvalsapi.ErrUnreachable):
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%v: check --remote (the stack's ApprovalsApiUrl) and your network", err))
	case errors.Is(err, warrant.ErrUnavailable):
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%v; nothing was recorded: retry shortly", err))
	}
	return failed(err)
}

// remoteDecide approves, rejects or rolls back d through the approvals API: it reads the
// graded diff of d (and the audit head with it), refuses suspicious text without
// acceptSuspicious as the local path does, then records the decision over that head.
func (a *app) remoteDecide(cmd *cobra.Command, r *approvalsapi.Remote, kind warrant.DecisionKind, server, tool, arg string, accept bool, note string) (decisionJSON, error) {
	for _, f := range []string{"sign-key", "agent", "ssh-key"} {
		if cmd.Flags().Changed(f) {
			return decisionJSON{}, cli.Usage(cmd, "--%s with --remote: the approvals API records your AWS principal as the decider; drop --%s", f, f)
		}
	}
	ctx := cmd.Context()
	// The API resolves a prefix among the tool's versions (as the local catalog does) and
	// answers the full digest, which is what is decided and attested.
	dv, err := r.Diff(ctx, server, tool, "", arg)
	if err != nil {
		return decisionJSON{}, remoteFailed(err)
	}
	d := dv.To
	if want := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(arg)), warrant.DigestPrefix); !strings.HasPrefix(d.Hex(), want) {
		return decisionJSON{}, cli.Exit(cli.ExitUsage, fmt.Errorf("server %q tool %q: the approvals API answered for %s, not %s; nothing was recorded", server, visible(tool), d, arg))
	}
	if dv.ToInspection.Suspicious() && !accept && kind != warrant.DecisionRejected {
		return decisionJSON{}, cli.Exit(cli.ExitUsage, fmt.Errorf("server %q tool %q version %s has %s; read it with 'toolwarrant diff --remote', and pass --accept-suspicious to %s it anyway (recorded)",
			server, visible(tool), d.Short(), visible(dv.ToInspection.Summary()), kind2cmd(kind)))
	}
	head := dv.AuditHead
	ans, err := r.Decide(ctx, server, tool, approvalsapi.DecisionRequest{Decision: kind, Digest: d, AuditHead: &head, AcceptSuspicious: accept, Note: note})
	if errors.Is(err, approvalsapi.ErrUnreachable) {
		return decisionJSON{}, cli.Exit(cli.ExitUsage, fmt.Errorf("%v: the answer was lost, so the decision may have been recorded: check 'toolwarrant list --remote' before deciding again", err))
	}
	if err != nil {
		return decisionJSON{}, remoteFailed(err)
	}
	out := decisionJSON{Server: server, Tool: tool, Decision: kind, Digest: d, Unchanged: ans.Unchanged}
	if ans.Unchanged {
		return out, nil
	}
	if ans.AuditHead == nil {
		return decisionJSON{}, cli.Exit(cli.ExitUsage, fmt.Errorf("the approvals API recorded the decision but answered no audit head; check 'toolwarrant list --remote'"))
	}
	out.By, out.AuditHead = ans.By, ans.AuditHead
	return out, nil
}
