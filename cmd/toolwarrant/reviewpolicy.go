package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// Review policies (docs/toolwarrant.md, "Review policies"): review-policy add, revoke and
// list.

const reviewPolicyLong = `A review policy is a file a person on the trust list signs once: which kinds of drift, on
which servers, are approved at the crawl without anyone reading them. For example:

  {"name": "routine-metadata", "note": "display titles and _meta are routine",
   "accept": [{"server": "weather", "maxGrade": "WARNING", "rules": ["title-changed", "meta-changed"]}]}

Each accept rule names a server (or "*"), a maxGrade (INFO or WARNING: a CRITICAL change,
such as a reworded description, is never accepted) and the drift rules it accepts, by name
(docs/drift-grading.md; new-tool is not one of them: a first sight is read by a person).
On each crawl, a new version of an approved tool is approved by the first active policy
that has one rule accepting all of its drift — graded against the approved digest, no
suspicious text — as "policy:NAME"; its audit entry names the policy's digest and what was
graded, and 'audit verify' checks it was within an active policy. Revoking a policy stops
it from the next crawl on; what it approved stays approved until rejected.`

// policyJSON is one policy in review-policy list --json and the result of add/revoke.
type policyJSON struct {
	Name    string               `json:"name"`
	Digest  warrant.Digest       `json:"digest"`
	Signer  string               `json:"signer"`
	AddedAt string               `json:"addedAt"`
	Entry   int64                `json:"entry"`
	Policy  warrant.ReviewPolicy `json:"policy"`
}

func policyOf(ap warrant.ActivePolicy) policyJSON {
	return policyJSON{Name: ap.Policy.Name, Digest: ap.Digest, Signer: ap.Signer, AddedAt: ap.AddedAt.UTC().Format("2006-01-02T15:04:05Z"), Entry: ap.Entry, Policy: ap.Policy}
}

// accepts describes a policy's accept rules in one line.
func accepts(p warrant.ReviewPolicy) string {
	parts := make([]string, len(p.Accept))
	for i, a := range p.Accept {
		rules := make([]string, len(a.Rules))
		for j, r := range a.Rules {
			rules[j] = string(r)
		}
		parts[i] = fmt.Sprintf("%s ≤%s %s", a.Server, a.MaxGrade, strings.Join(rules, ","))
	}
	return strings.Join(parts, "; ")
}

func (a *app) reviewPolicyCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "review-policy",
		Short: "Signed review policies: drift approved at the crawl without review (never CRITICAL)",
		Long:  reviewPolicyLong + exitCodes("success", ""),
		Example: "  toolwarrant review-policy add routine.json --sign-key ~/.ssh/id_ed25519\n" +
			"  toolwarrant review-policy list\n  toolwarrant review-policy revoke routine-metadata --sign-key ~/.ssh/id_ed25519",
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.reviewPolicyChangeCmd(warrant.PolicyAdd), a.reviewPolicyChangeCmd(warrant.PolicyRevoke), a.reviewPolicyListCmd())
	return c
}

func (a *app) reviewPolicyChangeCmd(action string) *cobra.Command {
	var sf signingFlags
	var asJSON bool
	use, short := "add FILE (--sign-key FILE | --agent)", "Sign and add a review policy from a JSON file"
	long := short + `: the policy is checked (a CRITICAL grade, an unknown rule or new-tool is refused,
saying which), signed with your key over the audit head you read, recorded in the audit log
and applied from the next crawl on. A policy of the same name must be revoked first; at
most 16 are active.`
	if action == warrant.PolicyRevoke {
		use, short = "revoke NAME|DIGEST (--sign-key FILE | --agent)", "Sign and revoke an active review policy"
		long = short + ` (by name, or its digest: all 64 digits or a unique prefix of at least 8).
From the next crawl on it approves nothing; what it approved stays approved, as any
approval does until it is rejected.`
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long + exitCodes("recorded", ""),
		Example: map[string]string{warrant.PolicyAdd: "  toolwarrant review-policy add routine.json --sign-key ~/.ssh/id_ed25519",
			warrant.PolicyRevoke: "  toolwarrant review-policy revoke routine-metadata --sign-key ~/.ssh/id_ed25519"}[action],
		Args: cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var p warrant.ReviewPolicy
			if action == warrant.PolicyAdd {
				var err error
				if p, err = readReviewPolicy(cmd, args[0]); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			w, signer, err := a.openSigning(ctx, cmd, &sf)
			if err != nil {
				return err
			}
			defer w.Close()
			att := trust.SSHAttester{Signer: signer, Log: w.Catalog}
			var res warrant.PolicyResult
			if action == warrant.PolicyAdd {
				res, err = w.Service.AddPolicy(ctx, p, att)
			} else {
				res, err = w.Service.RevokePolicy(ctx, args[0], att)
			}
			if err != nil {
				var ue *trust.UntrustedError
				if errors.Is(err, trust.ErrNoList) || errors.As(err, &ue) {
					return untrusted(err, "there is no trust list yet: run 'toolwarrant trust init' first",
						"your key %s is not on the trust list; only a trusted key can sign a review policy")
				}
				return decisionFailed(err)
			}
			if asJSON {
				return writeJSON(a.env.Stdout, map[string]any{"action": res.Action, "policy": policyOf(res.Policy), "by": res.By, "auditHead": res.AuditHead})
			}
			verb := "added"
			if action == warrant.PolicyRevoke {
				verb = "revoked"
			}
			fmt.Fprintf(a.env.Stdout, "%s review policy %s %s (signed by %s)\n", verb, res.Policy.Policy.Name, res.Policy.Digest, res.By)
			if action == warrant.PolicyAdd {
				fmt.Fprintf(a.env.Stdout, "accepts: %s\napplied from the next crawl on\n", visible(accepts(res.Policy.Policy)))
			}
			fmt.Fprintf(a.env.Stdout, "audit head: %d:%s\n", res.AuditHead.Seq, res.AuditHead.Hash)
			return nil
		},
	}
	sf.add(c)
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: action, policy (name, digest, signer, addedAt, entry, policy), by, auditHead")
	return c
}

// readReviewPolicy reads and checks a policy file: a regular file within MaxPolicyBytes.
// Anything wrong is a usage error naming the file.
func readReviewPolicy(cmd *cobra.Command, path string) (warrant.ReviewPolicy, error) {
	f, err := os.Open(path)
	if err != nil {
		return warrant.ReviewPolicy{}, cli.Usage(cmd, "policy file: %v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return warrant.ReviewPolicy{}, cli.Usage(cmd, "policy file %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, warrant.MaxPolicyBytes+1))
	if err != nil {
		return warrant.ReviewPolicy{}, cli.Usage(cmd, "policy file %s: %v", path, err)
	}
	p, err := warrant.ParsePolicy(b)
	if err != nil {
		return warrant.ReviewPolicy{}, cli.Usage(cmd, "policy file %s: %s; nothing was recorded", path, strings.TrimPrefix(err.Error(), warrant.ErrInvalid.Error()+": "))
	}
	return p, nil
}

func (a *app) reviewPolicyListCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "list",
		Short:   "List the active review policies",
		Long:    "List the active review policies: name, digest, who signed it, when, its audit entry, and what it accepts." + exitCodes("listed", ""),
		Example: "  toolwarrant review-policy list\n  toolwarrant review-policy list --json",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			w, _, err := a.openWarrant(ctx, cmd, true)
			if err != nil {
				return err
			}
			defer w.Close()
			set, err := w.Service.Policies(ctx)
			if err != nil {
				return failed(err)
			}
			out := make([]policyJSON, 0, len(set.Policies))
			for _, ap := range set.Policies {
				out = append(out, policyOf(ap))
			}
			if asJSON {
				return writeJSON(a.env.Stdout, map[string]any{"policies": out})
			}
			if len(out) == 0 {
				fmt.Fprintln(a.env.Stdout, "no active review policies ('toolwarrant review-policy add FILE' adds one)")
				return nil
			}
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDIGEST\tSIGNER\tADDED\tENTRY\tACCEPTS")
			for _, p := range out {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", p.Name, p.Digest.Short(), visible(p.Signer), p.AddedAt, p.Entry, visible(accepts(p.Policy)))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: policies, each with name, digest, signer, addedAt, entry and policy")
	return c
}
