package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/cli"
)

// A verifier's policy file (c2sp.org/tlog-policy): the log's key, the witnesses' keys and
// the quorum, in place of --vkey, --witness-key and --quorum (docs/transparency-log.md,
// "Verifier policy").

const policyFlagUsage = "a c2sp.org/tlog-policy `FILE`: the log's checkpoint key, the witnesses' keys and the quorum of them that must have cosigned the newest checkpoint (instead of --vkey, --witness-key and --quorum)"

// readPolicy reads and parses a policy file: a regular file, bounded. Anything wrong
// with it is a usage error naming the file (and the line).
func readPolicy(cmd *cobra.Command, path string) (*checkpoint.Policy, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("--policy: %v", err))
	}
	if !st.Mode().IsRegular() {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("--policy %s is not a regular file", path))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("--policy: %v", err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, checkpoint.MaxPolicyBytes+1))
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("--policy: %v", err))
	}
	p, err := checkpoint.ParsePolicy(b)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("--policy %s: %v", path, err))
	}
	if len(p.Logs) == 0 {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("--policy %s names no log: add a line 'log <vkey>' with the key 'toolwarrant audit key --checkpoint' prints", path))
	}
	return p, nil
}

// policyFlags refuses --policy together with the flags it replaces.
func policyFlags(cmd *cobra.Command) error {
	var both []string
	for _, f := range []string{"vkey", "witness-key", "quorum"} {
		if cmd.Flags().Changed(f) {
			both = append(both, "--"+f)
		}
	}
	if len(both) > 0 {
		return cli.Usage(cmd, "--policy names the log's key, the witnesses and the quorum: drop %s, or drop --policy", strings.Join(both, " and "))
	}
	return nil
}

// policyVKey picks the policy's log for this catalog: the only one, else the one whose
// origin is the catalog's (origin: the log's resolved origin).
func policyVKey(p *checkpoint.Policy, origin string) (string, error) {
	if len(p.Logs) == 1 {
		return p.Logs[0].VKey, nil
	}
	if l, ok := p.Log(origin); ok {
		return l.VKey, nil
	}
	names := make([]string, len(p.Logs))
	for i, l := range p.Logs {
		names[i] = l.Origin
	}
	return "", fmt.Errorf("--policy lists %d logs (%s), none of them %s, this catalog's origin: pass --origin", len(p.Logs), strings.Join(names, ", "), origin)
}

// policyTreeVerify is what `audit verify --policy FILE` checks the tree with: the
// policy's log key for this catalog, its witnesses and its quorum.
func (a *app) policyTreeVerify(cmd *cobra.Command, catalog string, f tlogFlags, path string) (treeVerify, error) {
	if err := policyFlags(cmd); err != nil {
		return treeVerify{}, err
	}
	p, err := readPolicy(cmd, path)
	if err != nil {
		return treeVerify{}, err
	}
	origin := ""
	if len(p.Logs) > 1 {
		st, err := a.state(cmd, catalog, f)
		if err != nil {
			return treeVerify{}, err
		}
		origin = st.origin
	}
	if f.vkey, err = policyVKey(p, origin); err != nil {
		return treeVerify{}, cli.Usage(cmd, "%v", err)
	}
	st, err := a.state(cmd, catalog, f)
	if err != nil {
		return treeVerify{}, err
	}
	return treeVerify{st: st, witnesses: p.WitnessVerifiers(), policy: p}, nil
}
