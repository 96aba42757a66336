package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/keysigner"
	"github.com/agentgate-dev/agentgate/internal/witness"
)

// `toolwarrant witness`: a c2sp.org/tlog-witness witness of other teams' logs
// (internal/witness; docs/transparency-log.md, "Run a witness").

// witnessFlags are the files every witness command names.
type witnessFlags struct{ key, state string }

func (a *app) addWitnessFlags(c *cobra.Command, f *witnessFlags, withKey bool) {
	if withKey {
		c.Flags().StringVar(&f.key, "key", "", "the witness key `FILE`, Ed25519 PEM, mode 0600 (default: <config dir>/witness/witness.key)")
	}
	c.Flags().StringVar(&f.state, "state", "", "the witness state `FILE`: its name and key, and each log's key and latest cosigned checkpoint (default: <config dir>/witness/state.json)")
}

// witnessPaths resolves --key and --state: flag, else the configuration directory.
func (a *app) witnessPaths(cmd *cobra.Command, f witnessFlags, withKey bool) (key, state string, err error) {
	dir := a.configDir()
	key, state = f.key, f.state
	if key == "" && dir != "" {
		key = filepath.Join(dir, "witness", "witness.key")
	}
	if state == "" && dir != "" {
		state = filepath.Join(dir, "witness", "state.json")
	}
	if state == "" || (withKey && key == "") {
		return "", "", cli.Usage(cmd, "no configuration directory (set HOME or TOOLWARRANT_CONFIG_DIR): pass --state FILE%s", map[bool]string{true: " and --key FILE", false: ""}[withKey])
	}
	return key, state, nil
}

func (a *app) witnessCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "witness",
		Short: "Run a c2sp.org/tlog-witness witness: cosign other logs' checkpoints when they extend the last one seen",
		Long: `A witness cosigns a log's checkpoint (c2sp.org/tlog-cosignature, cosignature/v1, timestamped
Ed25519) only when a consistency proof shows it extends the last checkpoint it cosigned for
that log, so a log cannot show different histories to different readers without a witness
refusing. Two teams each run one and witness each other's toolwarrant logs: 'witness init'
makes the key and the state file, 'witness add-log' trusts a log's checkpoint key, 'witness
serve' answers 'toolwarrant audit checkpoint --witness URL' (and any tlog-witness client).
See docs/transparency-log.md, "Run a witness".` + cli.ExitCodes("success", "", ""),
		Example: "  toolwarrant witness init --name witness.example.com/team-a\n  toolwarrant witness serve",
		Args:    cli.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(a.witnessInitCmd(), a.witnessAddLogCmd(), a.witnessServeCmd(), a.witnessListCmd())
	return c
}

func (a *app) witnessInitCmd() *cobra.Command {
	var f witnessFlags
	var name string
	c := &cobra.Command{
		Use:   "init --name NAME",
		Short: "Create the witness's Ed25519 key and its state file; print its verifier key",
		Long: `Create the witness key (--key, Ed25519 PEM, mode 0600) and the state file (--state) of a witness
named NAME, and print the witness's verifier key in signed-note format
(NAME+<key hash>+base64(0x04 || public key), a cosignature/v1 key): give it to the teams whose
logs you witness, for their 'audit verify --witness-key' or policy file. NAME is a schema-less
URL that identifies the witness (witness.example.com/team-a): no spaces, no '+'.

Neither file may exist: a new state with an old key could cosign a log's rollback.` +
			cli.ExitCodes("the key and the state were created", "", "could not run: usage error, a file that exists, a directory that cannot be written"),
		Example: "  toolwarrant witness init --name witness.example.com/team-a\n  toolwarrant witness init --name witness.example.com/team-a --key /etc/toolwarrant/witness.key --state /var/lib/toolwarrant/witness.json",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !checkpoint.ValidOrigin(name) {
				return cli.Usage(cmd, "--name %q: give the witness's name, a schema-less URL without spaces or '+' (witness.example.com/team-a)", name)
			}
			keyPath, statePath, err := a.witnessPaths(cmd, f, true)
			if err != nil {
				return err
			}
			for _, p := range []string{keyPath, statePath} {
				if _, err := os.Lstat(p); err == nil {
					return cli.Exit(cli.ExitUsage, fmt.Errorf("%s exists already: nothing was created (a witness keeps its key and its state together; pass other --key and --state paths for a new witness)", p))
				}
			}
			for _, p := range []string{keyPath, statePath} {
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
			}
			k, err := keysigner.Create(keyPath, keysigner.Ed25519)
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			vkey := checkpoint.CosignerVerifierKey(name, k.Public().(ed25519.PublicKey))
			if err := (&witness.File{Path: statePath}).Create(cmd.Context(), name, vkey); err != nil {
				os.Remove(keyPath)
				return cli.Exit(cli.ExitUsage, err)
			}
			fmt.Fprintf(a.env.Stderr, "created witness key %s (mode 0600) and state %s; the witness's verifier key:\n", keyPath, statePath)
			fmt.Fprintln(a.env.Stdout, vkey)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "the witness's `NAME`, a schema-less URL (witness.example.com/team-a)")
	a.addWitnessFlags(c, &f, true)
	return c
}

func (a *app) witnessAddLogCmd() *cobra.Command {
	var f witnessFlags
	var origin, vkey string
	c := &cobra.Command{
		Use:   "add-log --origin ORIGIN --vkey KEY",
		Short: "Trust a log's checkpoint key: the witness will cosign that log's checkpoints",
		Long: `Add the log ORIGIN (the first line of its checkpoints) with its checkpoint verifier key (--vkey,
name+hash+base64 or a file holding it: what 'toolwarrant audit key --checkpoint' prints) to the
witness state. The witness then cosigns its first checkpoint submitted from size 0 (trust on
first use) and from then on only checkpoints that extend the last one it cosigned. A serving
witness sees the log at its next request, without a restart. The same origin and key again
changes nothing; another key for a known origin is refused.` +
			cli.ExitCodes("the log was added, or the witness knew it with that key", "", "could not run: usage error, a malformed key, another key for the origin, no state (run 'toolwarrant witness init')"),
		Example: "  toolwarrant witness add-log --origin example.com/team-b/toolwarrant --vkey \"$(cat team-b.vkey)\"",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if origin == "" || vkey == "" {
				return cli.Usage(cmd, "--origin and --vkey are required")
			}
			vk, err := readVKey(vkey)
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			_, statePath, err := a.witnessPaths(cmd, f, false)
			if err != nil {
				return err
			}
			added, err := (&witness.File{Path: statePath}).AddLog(cmd.Context(), origin, vk)
			if errors.Is(err, fs.ErrNotExist) {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("no witness state at %s: run 'toolwarrant witness init --name NAME' first", statePath))
			}
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			if added {
				fmt.Fprintf(a.env.Stdout, "the witness now knows %s (key %s); it cosigns its first checkpoint from size 0\n", origin, vk)
			} else {
				fmt.Fprintf(a.env.Stdout, "the witness knows %s with that key already\n", origin)
			}
			return nil
		},
	}
	c.Flags().StringVar(&origin, "origin", "", "the log's `ORIGIN`, the first line of its checkpoints")
	c.Flags().StringVar(&vkey, "vkey", "", "the log's checkpoint verifier `KEY` (name+hash+base64, or a file holding it)")
	a.addWitnessFlags(c, &f, false)
	return c
}

func (a *app) witnessServeCmd() *cobra.Command {
	var f witnessFlags
	var addr string
	c := &cobra.Command{
		Use:   "serve [--addr 127.0.0.1:0]",
		Short: "Serve c2sp.org/tlog-witness (POST /add-checkpoint) and print its URL",
		Long: `Serve the witness's c2sp.org/tlog-witness API on --addr (loopback by default; port 0 picks a
free one) and print its URL, the submission prefix logs pass to 'audit checkpoint --witness'.

POST /add-checkpoint takes "old N", the consistency proof lines, a blank line and the signed
checkpoint, and answers with the witness's cosignature line, after recording the checkpoint in
the state file. It refuses, as the spec says: 404 a log it was not told of ('witness add-log'),
403 a checkpoint without a valid signature of the log's key, 409 an old size that is not the
size it last cosigned (the body is that size, text/x.tlog.size), 422 a consistency proof that
does not verify or the same size with another root hash (a fork), 400 a malformed request, 413
a body over 64 KiB. GET /<hex SHA-256 of the origin>/checkpoint serves the latest checkpoint
it cosigned. One line per request goes to stderr.

Another address than loopback (--addr 0.0.0.0:8443) is reachable from the network, without
TLS: put the witness behind a TLS proxy. Several processes may serve one state: every change
is made under the state's lock. SIGTERM or Ctrl-C stops it gracefully.` +
			cli.ExitCodes("stopped on a signal", "", "could not start: usage error, no state or key, a key that is not the state's, an address in use"),
		Example: "  toolwarrant witness serve\n  toolwarrant witness serve --addr 127.0.0.1:7380 --key witness.key --state witness.json",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keyPath, statePath, err := a.witnessPaths(cmd, f, true)
			if err != nil {
				return err
			}
			state := &witness.File{Path: statePath}
			st, err := state.Read()
			if errors.Is(err, fs.ErrNotExist) {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("no witness state at %s: run 'toolwarrant witness init --name NAME' first", statePath))
			}
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			k, err := keysigner.Load(keyPath)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("witness key: %v", err))
			}
			cs, err := checkpoint.NewCosigner(st.Name, k, a.deps.now)
			if err != nil {
				return cli.Exit(cli.ExitUsage, fmt.Errorf("witness key %s: %v", keyPath, err))
			}
			logger := slog.New(slog.NewTextHandler(a.env.Stderr, nil))
			h, err := witness.New(witness.Config{State: state, Cosigner: cs, Logger: logger})
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			ln, loopback, err := witness.Listen(addr)
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			url := "http://" + ln.Addr().String()
			fmt.Fprintln(a.env.Stdout, url)
			if !loopback {
				fmt.Fprintf(a.env.Stderr, "toolwarrant: warning: %s is reachable from the network without TLS; put the witness behind a TLS proxy\n", ln.Addr())
			}
			fmt.Fprintf(a.env.Stderr, "toolwarrant: witness %s serving c2sp.org/tlog-witness at %s for %s until interrupted; verifier key %s\n",
				st.Name, url, cli.Count(len(st.Logs), "log", ""), st.VKey)
			if err := witness.Serve(cmd.Context(), ln, h); err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			fmt.Fprintln(a.env.Stderr, "toolwarrant: witness stopped")
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen on this `ADDRESS` (port 0: any free port; loopback unless you say otherwise)")
	a.addWitnessFlags(c, &f, true)
	return c
}

func (a *app) witnessListCmd() *cobra.Command {
	var f witnessFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "Show the witness's name, verifier key and every log it witnesses, with the size it last cosigned",
		Long: `Print the witness's name and verifier key, then one line per log: its origin, the size and root
hash of the latest checkpoint the witness cosigned (0 before the first), and its checkpoint key.
--json prints name, vkey and logs (origin, vkey, size, root).` +
			cli.ExitCodes("listed", "", "could not run: usage error, no or unreadable state"),
		Example: "  toolwarrant witness list\n  toolwarrant witness list --state witness.json --json",
		Args:    cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, statePath, err := a.witnessPaths(cmd, f, false)
			if err != nil {
				return err
			}
			st, err := (&witness.File{Path: statePath}).Read()
			if err != nil {
				return cli.Exit(cli.ExitUsage, err)
			}
			origins := make([]string, 0, len(st.Logs))
			for o := range st.Logs {
				origins = append(origins, o)
			}
			slices.Sort(origins)
			if asJSON {
				logs := []map[string]any{}
				for _, o := range origins {
					l := st.Logs[o]
					logs = append(logs, map[string]any{"origin": o, "vkey": l.VKey, "size": l.Size, "root": l.Root})
				}
				return writeJSON(a.env.Stdout, map[string]any{"name": st.Name, "vkey": st.VKey, "logs": logs})
			}
			fmt.Fprintf(a.env.Stdout, "witness %s\nvkey %s\n", st.Name, st.VKey)
			for _, o := range origins {
				l := st.Logs[o]
				fmt.Fprintf(a.env.Stdout, "log %s size %d root %s key %s\n", visible(o), l.Size, l.Root, strings.TrimSpace(l.VKey))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON document: name, vkey, logs")
	a.addWitnessFlags(c, &f, false)
	return c
}
