package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/localfile"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
)

func (a *app) lockCmd() *cobra.Command {
	var server string
	var noSnapshot bool
	var version int
	var pf profileFlags
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "List every configured server and write agentgate.lock",
		Long: `lock starts or connects to every server in the MCP client config, lists what it offers
(following pagination) and writes agentgate.lock, with agentgate.snapshot.json beside it:
the plaintext of what was locked, so that diffs can show the old words and grade each
change; commit both.

A new lockfile is version 2: per server and client profile, every tool (the SHA-256 of its
name, description and canonical input schema, and toolwarrant's digest of the whole tool
object), every prompt, resource and resource template, and the hash of the server's
instructions. An existing lockfile keeps its version: a version 1 file is rewritten as
version 1 (tools only: name, description, input schema) until you upgrade it with
--lockfile-version 2.

Servers can show different tools to different clients, so a version 2 surface is listed as
a named client: --profile generic (the default), claude-code, vscode or cursor (repeat the
flag or separate with commas to lock several), or explicit capabilities with --capabilities
(docs/agentgate.md says what each profile declares). Without --profile, a refresh lists
every server as the profiles it was locked as.

Nothing is written unless every listing succeeded. If the surface is unchanged the files are
left as they are. --server NAME refreshes one server and keeps the others as locked (a NAME
no longer in the config is dropped from the lockfile).

With --approvals LOG --policy FILE (env AGENTGATE_APPROVALS, AGENTGATE_APPROVALS_POLICY; version
2), lock also proves that every tool digest it pins is approved in toolwarrant's transparency
log — a tlog-tiles directory or http(s) URL, verified under the c2sp.org/tlog-policy FILE as
'toolwarrant audit verify --policy' checks it, every entry hashed to the checkpoint's root —
and writes agentgate.approvals.json beside the lockfile (--approvals-bundle PATH): the
checkpoint note with its cosignatures and, per digest, the approval entry's index, its bytes
and an inclusion proof. Commit it: 'agentgate ci --approvals agentgate.approvals.json' (or
--offline) verifies it without the log. A digest that is not its tool's approved digest
refuses the lock (exit 1) and nothing is written.` + cli.ExitCodes("the lockfile was written or is already up to date",
			"with --approvals: a locked tool digest is not approved (nothing was written)",
			"could not run: usage error, unreadable or invalid config or lockfile,\n     a server that cannot be started, reached or listed in time, a config with no server,\n     an approvals log or policy that cannot be read or does not verify"),
		Example: `  agentgate lock
  agentgate lock --profile generic,vscode
  agentgate lock --capabilities '{"roots":{},"sampling":{}}' --profile-name my-agent
  agentgate lock --lockfile-version 2            # upgrade a version 1 lockfile
  agentgate lock --config .vscode/mcp.json --server github
  agentgate lock --approvals https://tlog.example.com/toolwarrant/ --policy toolwarrant.policy`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := a.lockRun(cmd, version, server, noSnapshot, pf); err != nil {
				return err
			}
			if a.lockJSON {
				if err := writeJSON(a.env.Stdout, a.lockOut); err != nil {
					return cli.Exit(cli.ExitUsage, err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "refresh only the server `NAME`, keeping the others as locked")
	cmd.Flags().BoolVar(&noSnapshot, "no-snapshot", false, "do not write the snapshot file")
	cmd.Flags().BoolVar(&a.lockJSON, "json", false, "print the outcome as one JSON document (fields in docs/agentgate.md)")
	cmd.Flags().BoolVar(&a.pkg.none, "no-package", false, "do not pin what each server runs from (npm or PyPI version and hashes, image digest, URL); version 2 only")
	cmd.Flags().BoolVar(&a.pkg.pinTLS, "pin-tls", false, "also pin the SHA-256 of each https server's TLS public key (SPKI): ci then fails when another key answers")
	cmd.Flags().IntVar(&version, "lockfile-version", 0, "write lockfileVersion `N` (1 or 2); default: the existing file's version, 2 for a new file")
	cmd.Flags().StringArrayVar(&pf.names, "profile", nil, "list as the client `NAME`: generic, claude-code, vscode or cursor (repeatable, or comma-separated; version 2 only)")
	cmd.Flags().StringVar(&pf.capabilities, "capabilities", "", "also list as a client declaring these ClientCapabilities (a `JSON` object), named by --profile-name")
	cmd.Flags().StringVar(&pf.profileName, "profile-name", "custom", "the `NAME` of the --capabilities profile in the lockfile")
	cmd.Flags().StringVar(&pf.protocolVersion, "protocol-version", mcpclient.LegacyProtocolVersion, "the MCP protocol `REVISION` the --capabilities profile offers")
	a.appr.register(cmd, true)
	return cmd
}

// lockRun implements lock: it picks the version to write and hands over to the version 1 or
// version 2 writer.
func (a *app) lockRun(cmd *cobra.Command, version int, server string, noSnapshot bool, pf profileFlags) error {
	o, err := a.resolve(cmd, true)
	if err != nil {
		return err
	}
	explicit, err := pf.explicit(cmd)
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("lockfile-version") && version != 1 && version != 2 {
		return cli.Usage(cmd, "--lockfile-version must be 1 or 2")
	}
	existing := 0
	data, err := readLocal(o.lockfile, maxLockfileBytes)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot read: %v", a.rel(o.lockfile), unwrapPath(err)))
	}
	if err == nil {
		v, err := lockfile.ReadVersion(data)
		if err != nil {
			return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %s", a.rel(o.lockfile), strings.TrimPrefix(err.Error(), "invalid lockfile: ")))
		}
		existing = v
	}
	target := version
	if target == 0 {
		target = existing
	}
	if target == 0 {
		target = lockfile.Version2
	}
	plan, err := a.approvalsPlan(cmd, o, a.appr, true)
	if err != nil {
		return err
	}
	if plan != nil && target != lockfile.Version2 {
		return cli.Usage(cmd, "--approvals proves the tool digests of a version 2 lockfile; %s is version 1 (upgrade it with --lockfile-version 2)", a.rel(o.lockfile))
	}
	if target == lockfile.Version {
		if a.pkg.pinTLS || a.pkg.none {
			return cli.Usage(cmd, "package identity needs lockfile version 2 (%s is version 1: upgrade it with --lockfile-version 2)", a.rel(o.lockfile))
		}
		if existing == lockfile.Version2 {
			return cli.Usage(cmd, "%s is version 2; rewriting it as version 1 would drop what it pins beyond tools (remove it first if that is what you want)", a.rel(o.lockfile))
		}
		if explicit != nil {
			return cli.Usage(cmd, "client profiles need lockfile version 2 (%s is version 1: upgrade it with --lockfile-version 2)", a.rel(o.lockfile))
		}
		return a.lock(cmd, o, server, !noSnapshot)
	}
	cfg, err := a.loadConfig(o)
	if err != nil {
		return err
	}
	if err := a.requireServers(o, cfg); err != nil {
		return err
	}
	var old *lockfile.LockfileV2
	switch existing {
	case lockfile.Version2:
		if old, err = a.readLockfileV2(o); err != nil {
			return err
		}
	case lockfile.Version:
		if server != "" {
			return cli.Usage(cmd, "upgrade the whole lockfile at once: --server cannot be combined with an upgrade to version 2")
		}
		a.lockOut.Upgraded = true
		a.say("upgrading %s from lockfileVersion 1 to 2\n", a.rel(o.lockfile))
	}
	var approvals *approvalsRun
	if plan != nil {
		// Read and verified before any server is started: a log that cannot be read stops
		// the lock at once.
		if approvals, err = a.readApprovals(cmd.Context(), plan); err != nil {
			return err
		}
	}
	return a.lockV2(cmd, o, cfg, old, server, explicit, !noSnapshot, approvals)
}

func (a *app) lock(cmd *cobra.Command, o opts, server string, withSnapshot bool) error {
	cfg, err := a.loadConfig(o)
	if err != nil {
		return err
	}
	if err := a.requireServers(o, cfg); err != nil {
		return err
	}
	old, missing, err := a.readLockfile(o)
	if err != nil {
		return err
	}
	oldSnap := lockfile.Surface(nil)
	if !missing {
		oldSnap = a.readSnapshot(o)
	}

	servers, err := a.selectServers(cmd, o, cfg, server, old != nil && hasKey(old.Servers, server))
	if err != nil {
		return err
	}
	dropped := droppedName(server, servers)
	results := a.listAll(cmd.Context(), o, servers)
	if err := failures(a, results, "servers could not be listed", "nothing was written"); err != nil {
		return err
	}

	live := lockfile.Surface{}
	for _, r := range results {
		live[r.name] = r.defs
	}
	now := a.deps.now()
	next, err := lockfile.New(live, "agentgate@"+a.deps.version, now)
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	snap := live
	if server != "" && old != nil {
		merged := lockfile.Surface{}
		keepOthers(next.Servers, merged, old.Servers, oldSnap, server, snapshotMatches)
		for name, defs := range live {
			merged[name] = defs
		}
		snap = merged
	}

	if old != nil && lockfile.SameSurface(old, next) {
		// Unchanged surface: keep generatedAt so an idle run changes no bytes.
		next.GeneratedAt = old.GeneratedAt
	}
	data, err := next.Marshal()
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	tools := 0
	for _, s := range next.Servers {
		tools += len(s.Tools)
	}
	a.lockOut = lockResult{Lockfile: a.rel(o.lockfile), LockfileVersion: lockfile.Version, Servers: len(next.Servers), Tools: tools}
	var marshalSnap func() ([]byte, error)
	if withSnapshot {
		marshalSnap = func() ([]byte, error) { return lockfile.MarshalSnapshot(snap) }
	}
	return a.writeLock(o, data, "", counts(len(next.Servers), tools), dropped, marshalSnap)
}

// droppedName is the server named by --server when selectServers gave none for it: it is only
// in the lockfile, and lock drops it. Otherwise it is "".
func droppedName(server string, servers []mcpclient.Server) string {
	if server != "" && len(servers) == 0 {
		return server
	}
	return ""
}

// writeLock writes the lockfile (data, with the counts in what) when it changed, and says so;
// version goes after its name in "wrote". It says that the server named dropped was dropped,
// unless dropped is "". Last it writes the snapshot that marshalSnap gives, unless
// marshalSnap is nil.
func (a *app) writeLock(o opts, data []byte, version, what, dropped string, marshalSnap func() ([]byte, error)) error {
	if localfile.Same(o.lockfile, maxLockfileBytes, data) {
		a.say("%s is up to date: %s\n", a.rel(o.lockfile), what)
	} else {
		if err := writeFileAtomic(o.lockfile, data); err != nil {
			return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot write: %w", a.rel(o.lockfile), unwrapPath(err)))
		}
		a.lockOut.Written = true
		a.say("wrote %s%s: %s\n", a.rel(o.lockfile), version, what)
	}
	if dropped != "" {
		a.lockOut.Dropped = dropped
		a.say("dropped server %q, which is no longer in %s\n", dropped, a.rel(o.config))
	}
	if marshalSnap == nil {
		return nil
	}
	sdata, err := marshalSnap()
	if err != nil {
		return cli.Exit(cli.ExitUsage, err)
	}
	return a.writeSnapshot(o, sdata)
}

// writeSnapshot writes the snapshot when it changed, and says so: it is the second file
// lock writes, to commit with the lockfile.
func (a *app) writeSnapshot(o opts, data []byte) error {
	a.lockOut.Snapshot = a.rel(o.snapshot)
	if localfile.Same(o.snapshot, maxSnapshotBytes, data) {
		a.say("%s is up to date\n", a.rel(o.snapshot))
		return nil
	}
	if err := writeFileAtomic(o.snapshot, data); err != nil {
		return cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot write: %w", a.rel(o.snapshot), unwrapPath(err)))
	}
	a.lockOut.SnapshotWritten = true
	a.say("wrote %s: the text of what was locked, so diffs show the old words; commit it with %s\n", a.rel(o.snapshot), a.rel(o.lockfile))
	return nil
}

// keepOthers keeps, when lock refreshes only server, every other server as locked: it copies
// them from old to next, and their snapshot entries from oldSnap to snap when they still
// match what is locked.
func keepOthers[S, D any](next map[string]S, snap map[string]D, old map[string]S, oldSnap map[string]D, server string, matches func(D, S) bool) {
	for name, s := range old {
		if name == server {
			continue
		}
		next[name] = s
		if defs, ok := oldSnap[name]; ok && matches(defs, s) {
			snap[name] = defs
		}
	}
}

// snapshotMatches reports whether defs are exactly the tools locked in s.
func snapshotMatches(defs []lockfile.Definition, s lockfile.Server) bool {
	got, err := lockfile.LockServer(defs)
	return err == nil && got.SurfaceHash == s.SurfaceHash
}

func namesOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}
