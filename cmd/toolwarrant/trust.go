package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/app/localapp"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/sshsig"
	"github.com/agentgate-dev/agentgate/internal/trust"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// untrusted explains a refusal of the trust list to the signer: there is none yet
// (noList), or the signer's key is not on it (notOnList, formatted with its fingerprint).
// Any other error is a failure to run.
func untrusted(err error, noList, notOnList string) error {
	var ue *trust.UntrustedError
	switch {
	case errors.Is(err, trust.ErrNoList):
		return cli.Exit(cli.ExitUsage, errors.New(noList))
	case errors.As(err, &ue):
		return cli.Exit(cli.ExitUsage, fmt.Errorf(notOnList, ue.Fingerprint))
	}
	return failed(err)
}

// signingFlags are the flags that choose the person's SSH key.
type signingFlags struct {
	key, pub string
	agent    bool
}

func (f *signingFlags) add(c *cobra.Command) {
	c.Flags().StringVar(&f.key, "sign-key", "", "sign with this unencrypted OpenSSH private key `FILE`")
	c.Flags().BoolVar(&f.agent, "agent", false, "sign with a key held by ssh-agent ($SSH_AUTH_SOCK)")
	c.Flags().StringVar(&f.pub, "ssh-key", "", "with --agent: the public key `FILE` of the agent key to use")
}

// openSigning opens embedded toolwarrant for writing, then the signer's key: what every
// command that a person signs starts with. The caller closes w.
func (a *app) openSigning(ctx context.Context, cmd *cobra.Command, f *signingFlags) (*localapp.Toolwarrant, sshsig.Signer, error) {
	w, cfg, err := a.openWarrant(ctx, cmd, false)
	if err != nil {
		return nil, nil, err
	}
	s, err := f.signer(cmd, cfg)
	if err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, s, nil
}

func (f *signingFlags) signer(cmd *cobra.Command, cfg config.Toolwarrant) (sshsig.Signer, error) {
	switch {
	case f.key != "" && f.agent:
		return nil, cli.Usage(cmd, "give --sign-key or --agent, not both")
	case f.key != "":
		s, err := sshsig.LoadKeyFile(f.key)
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %v", f.key, err))
		}
		return s, nil
	case f.agent:
		var pub *sshsig.PublicKey
		if f.pub != "" {
			k, _, err := readPubKey(cmd, f.pub)
			if err != nil {
				return nil, err
			}
			pub = &k
		}
		s, err := sshsig.AgentSigner(cfg.SSHAuthSock, pub)
		if err != nil {
			return nil, cli.Exit(cli.ExitUsage, err)
		}
		return s, nil
	}
	return nil, cli.Usage(cmd, "say whose signature this is: --sign-key FILE or --agent")
}

// pubKeyHint says what to do about a file that is not a public key line: a private key is
// named as such, with the public key that belongs there (never its content).
func pubKeyHint(path string, err error) error {
	if errors.Is(err, sshsig.ErrPrivateKey) {
		return fmt.Errorf("%w: pass its public key, %s.pub (ssh-keygen -y -f %s prints it)", err, path, path)
	}
	return err
}

// readPub reads the public key --ssh-key names (required): its authorized_keys line and
// its comment.
func readPub(cmd *cobra.Command, path string) (string, string, error) {
	if path == "" {
		return "", "", cli.Usage(cmd, "--ssh-key PUB is required")
	}
	k, comment, err := readPubKey(cmd, path)
	if err != nil {
		return "", "", err
	}
	return k.AuthorizedKey(), comment, nil
}

// readPubKey reads and parses the public key file --ssh-key names. Every failure is an
// input error (exit 2) naming the flag and the file; a missing file says how to make a
// key pair, since a newcomer often has none yet.
func readPubKey(cmd *cobra.Command, path string) (sshsig.PublicKey, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return sshsig.PublicKey{}, "", cli.Usage(cmd, "--ssh-key %s: key not found; %s", path, keygenHint(path))
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is named once, first
		}
		return sshsig.PublicKey{}, "", cli.Usage(cmd, "--ssh-key %s: cannot read it: %v", path, err)
	}
	k, comment, err := sshsig.ParseAuthorizedKey(string(b))
	if err != nil {
		return sshsig.PublicKey{}, "", cli.Usage(cmd, "--ssh-key %s: %v", path, pubKeyHint(path, err))
	}
	return k, comment, nil
}

// keygenHint is the ssh-keygen command that makes the public key path names: for X.pub,
// the pair X and X.pub; for any other path X, the pair X and X.pub, of which X.pub is
// the file to pass.
func keygenHint(path string) string {
	if base, ok := strings.CutSuffix(path, ".pub"); ok && base != "" && !strings.HasSuffix(base, string(filepath.Separator)) {
		return fmt.Sprintf("create one with 'ssh-keygen -t ed25519 -f %s' (it writes %s and %s)", base, base, path)
	}
	return fmt.Sprintf("create one with 'ssh-keygen -t ed25519 -f %s' (then pass %s.pub)", path, path)
}

func (a *app) trustCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "trust",
		Short: "The operator trust list: whose SSH keys may approve, reject and roll back",
		Long: `The trust list names the SSH keys whose signatures count for decisions. It lives as signed
records in the audit chain: 'trust init' records the first list and prints the trust
root; 'trust add' and 'trust remove' need a signature by a key already on the list.` + exitCodes("success", ""),
		Example: "  toolwarrant trust init --ssh-key ~/.ssh/id_ed25519.pub --principal alice@example.com\n  toolwarrant trust list",
		Args:    cli.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.trustInitCmd(), a.trustChangeCmd("add"), a.trustChangeCmd("remove"), a.trustListCmd())
	return c
}

func (a *app) trustInitCmd() *cobra.Command {
	var pubPath, principal string
	c := &cobra.Command{
		Use:   "init --ssh-key PUB [--principal NAME]",
		Short: "Record the first trust list and print the trust root and audit head to keep",
		Long: `Record the trust list with one key, as a signed entry of the audit chain, and print the
trust root (that entry's hash) and the audit head. Keep both outside the database: with
them, 'toolwarrant audit verify --trust-root R --head H' catches a history rewritten and
re-signed by someone holding the database and the log key.

NAME defaults to the public key's comment.` + exitCodes("recorded", ""),
		Example: "  toolwarrant trust init --ssh-key ~/.ssh/id_ed25519.pub --principal alice@example.com",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, comment, err := readPub(cmd, pubPath)
			if err != nil {
				return err
			}
			if principal == "" {
				principal = comment
			}
			key, err := trust.NewKey(principal, line)
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			ctx := cmd.Context()
			w, cfg, err := a.openWarrant(ctx, cmd, false)
			if err != nil {
				return err
			}
			defer w.Close()
			st, head, err := trust.Load(ctx, w.Catalog)
			if err != nil {
				return failed(err)
			}
			if st.List != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("the trust list is already initialised (trust root %s); use 'toolwarrant trust add'", st.Root))
			}
			body, _ := json.Marshal(trust.Change{Action: "init", List: trust.List{Keys: []trust.Key{key}}, LogKey: w.LogKey.KeyID()})
			if err := w.Service.RecordEvent(ctx, warrant.Event{Type: trust.EventTrustChanged, Actor: cfg.Identity, Body: body}, head); err != nil {
				return failed(err)
			}
			h, _ := w.Catalog.AuditHead(ctx)
			fmt.Fprintf(a.env.Stdout, "trusted %s %s\ntrust root: %s\naudit head: %d:%s\nkeep both outside the database; 'toolwarrant audit verify --trust-root ROOT --head HEAD' checks them\n",
				key.Principal, key.Fingerprint, h.Hash, h.Seq, h.Hash)
			return nil
		},
	}
	c.Flags().StringVar(&pubPath, "ssh-key", "", "the first trusted public key `FILE` (an OpenSSH .pub)")
	c.Flags().StringVar(&principal, "principal", "", "the key owner's `NAME`, as in allowed_signers (default: the key's comment)")
	return c
}

func (a *app) trustChangeCmd(action string) *cobra.Command {
	var pubPath, principal string
	var sf signingFlags
	short := "Add a key to the trust list, signed by a key already on it"
	if action == "remove" {
		short = "Remove a key from the trust list, signed by a key on it"
	}
	c := &cobra.Command{
		Use:   action + " --ssh-key PUB [--principal NAME] (--sign-key FILE | --agent)",
		Short: short,
		Long: short + `. The signed statement names the key, the change and the audit head you read;
if the log moves on before it is recorded, the change is refused: run it again.` + exitCodes("recorded", ""),
		Example: "  toolwarrant trust " + action + " --ssh-key bob.pub --principal bob@example.com --sign-key ~/.ssh/id_ed25519",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, comment, err := readPub(cmd, pubPath)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			w, signer, err := a.openSigning(ctx, cmd, &sf)
			if err != nil {
				return err
			}
			defer w.Close()
			cat, svc := w.Catalog, w.Service
			st, head, err := trust.Load(ctx, cat)
			if err != nil {
				return failed(err)
			}
			me, err := st.Trusted(signer.Public().Fingerprint())
			if err != nil {
				return untrusted(err, "there is no trust list yet: run 'toolwarrant trust init' first",
					"your key %s is not on the trust list; only a trusted key can change it")
			}
			var subject trust.Key
			if action == "add" {
				if principal == "" {
					principal = comment
				}
				if subject, err = trust.NewKey(principal, line); err != nil {
					return cli.Usage(cmd, "%v", err)
				}
			} else {
				pub, _, _ := sshsig.ParseAuthorizedKey(line)
				if subject, err = st.Trusted(pub.Fingerprint()); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
			}
			stmt := trust.Statement{Type: trust.TypeTrust, Action: action, Subject: &subject, Signer: me.Principal, AuditHead: head, At: a.deps.now().UTC().Format("2006-01-02T15:04:05Z")}
			sb, sig, err := trust.Sign(stmt, signer)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			change := trust.Change{Action: action, Statement: sb, Signature: string(sig)}
			next := trust.List{Keys: append([]trust.Key(nil), st.List.Keys...)}
			if action == "add" {
				next.Keys = append(next.Keys, subject)
			} else {
				next.Keys = nil
				for _, k := range st.List.Keys {
					if k.Fingerprint != subject.Fingerprint {
						next.Keys = append(next.Keys, k)
					}
				}
			}
			change.List = next
			prev := head
			if change.List, err = trust.Apply(st.List, change, prev); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			body, _ := json.Marshal(change)
			if err := svc.RecordEvent(ctx, warrant.Event{Type: trust.EventTrustChanged, Actor: me.Principal, Body: body}, head); err != nil {
				return decisionFailed(err)
			}
			h, _ := cat.AuditHead(ctx)
			verb := "added"
			if action == "remove" {
				verb = "removed"
			}
			fmt.Fprintf(a.env.Stdout, "%s %s %s (signed by %s)\naudit head: %d:%s\n", verb, subject.Principal, subject.Fingerprint, me.Principal, h.Seq, h.Hash)
			return nil
		},
	}
	c.Flags().StringVar(&pubPath, "ssh-key", "", "the public key `FILE` to "+action)
	if action == "add" {
		c.Flags().StringVar(&principal, "principal", "", "the key owner's `NAME` (default: the key's comment)")
	}
	c.Flags().StringVar(&sf.key, "sign-key", "", "sign with this unencrypted OpenSSH private key `FILE` (a key on the trust list)")
	c.Flags().BoolVar(&sf.agent, "agent", false, "sign with a key held by ssh-agent ($SSH_AUTH_SOCK)")
	return c
}

func (a *app) trustListCmd() *cobra.Command {
	var asJSON bool
	var allowed string
	c := &cobra.Command{
		Use:     "list",
		Short:   "Show the trust list, its trust root, or write it as an allowed_signers file",
		Long:    "Show the trust list as the audit chain records it now." + exitCodes("shown", ""),
		Example: "  toolwarrant trust list\n  toolwarrant trust list --allowed-signers allowed_signers",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, _, _, err := a.open(cmd.Context(), cmd, true)
			if err != nil {
				return err
			}
			defer cat.Close()
			st, _, err := trust.Load(cmd.Context(), cat)
			if err != nil {
				return failed(err)
			}
			if st.List == nil {
				return cli.Exit(cli.ExitUsage, errors.New("there is no trust list yet: run 'toolwarrant trust init'"))
			}
			if allowed != "" {
				if err := os.WriteFile(allowed, []byte(st.List.AllowedSigners(trust.NamespaceApproval)), 0o644); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
			}
			if asJSON {
				return writeJSON(a.env.Stdout, map[string]any{"trustRoot": st.Root, "keys": st.List.Keys})
			}
			tw := tabwriter.NewWriter(a.env.Stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "PRINCIPAL\tFINGERPRINT\tKEY")
			for _, k := range st.List.Keys {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", k.Principal, k.Fingerprint, strings.SplitN(k.Key, " ", 2)[0])
			}
			tw.Flush()
			fmt.Fprintf(a.env.Stdout, "trust root: %s\n", st.Root)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: trustRoot, keys")
	c.Flags().StringVar(&allowed, "allowed-signers", "", "also write the list as an ssh-keygen allowed_signers `FILE`")
	return c
}

// decisionFailed explains a lost race on the audit head or the approval.
func decisionFailed(err error) error {
	if errors.Is(err, warrant.ErrConflict) {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%v; nothing was recorded: re-read ('toolwarrant list', 'toolwarrant diff') and sign again", err))
	}
	return failed(err)
}
