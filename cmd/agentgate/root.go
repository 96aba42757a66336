package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/localfile"
	"github.com/agentgate-dev/agentgate/internal/lockfile"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
	"github.com/agentgate-dev/agentgate/internal/readbound"
)

// exitCodes is the "Exit codes" section of a command's help (cli.ExitCodes); found ""
// leaves out 1.
func exitCodes(ok, found string) string {
	return cli.ExitCodes(ok, found, "could not run: usage error, unreadable or invalid config or lockfile,\n     a server that cannot be started, reached or listed in time")
}

// opts are the settings shared by every command, resolved once: flag > environment > default.
type opts struct {
	config string
	// configFound is true when config was found in the working directory rather than
	// named by --config or AGENTGATE_CONFIG.
	configFound bool
	lockfile    string
	snapshot    string
	timeout     time.Duration
	// limits bound what each server may make us read (readbound).
	limits readbound.Limits
}

type app struct {
	env  cli.Env
	deps deps

	flagConfig, flagLockfile, flagSnapshot string
	flagTimeout                            time.Duration
	flagLimits                             [3]readbound.Size // message, listing, server

	pkg pkgFlags      // lock --no-package, --pin-tls; ci --offline
	md  markdownFlags // diff --markdown, ci --markdown FILE
	// ghaOut is where GitHub Actions workflow commands go: stdout, or stderr under --json
	// (the runner reads both; stdout then holds the JSON document alone).
	ghaOut io.Writer
	// sarifWritten is set once ci --sarif wrote its file; failed holds the servers'
	// failures printed, for the SARIF of a ci that could not check.
	sarifWritten bool
	failed       []string
	lockJSON     bool       // lock --json
	lockOut      lockResult // what lock did, for --json

	appr approvalFlags // lock and ci --approvals, --policy
}

func newRoot(env cli.Env, d deps) *cobra.Command {
	if env.Getenv == nil {
		env.Getenv = func(string) string { return "" }
	}
	a := &app{env: env, deps: d}
	root := &cobra.Command{
		Use:   "agentgate",
		Short: "Pin the tool surface of your MCP servers and fail CI when it drifts",
		Long: `agentgate pins what your MCP servers show a model — every tool (the digest of the whole
tool object as served, and the hashes of its name, description and input schema), prompt,
resource, resource template and the server's instructions, per client profile — and what
each server runs from (the npm or PyPI version and its hashes, the image digest, the URL) in
agentgate.lock (lockfile version 2), next to your MCP client config. Commit it with
agentgate.snapshot.json; 'agentgate ci' then fails the build the moment an upstream server
rewords a description or changes a schema (a rug pull) or re-publishes its package, grading
each change CRITICAL, WARNING or INFO, and 'agentgate diff' shows exactly what changed.

The config is read from --config, or the first of .mcp.json, mcp.json, .vscode/mcp.json and
.cursor/mcp.json in the working directory (Claude Desktop, Claude Code, Cursor and VS Code
formats are understood).

Every command exits 0 when it did what it says (no drift), 1 when it found drift, 2 when it
could not run; its --help says which apply.`,
		Example: `  agentgate lock                 # list every configured server and write agentgate.lock
  agentgate ci                   # in CI: exit 1 if any tool drifted
  agentgate diff                 # show what changed, word by word`,
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.flagConfig, "config", "", "MCP client config `PATH` (env AGENTGATE_CONFIG; default: first of "+strings.Join(mcpclient.DefaultConfigNames, ", ")+")")
	pf.StringVar(&a.flagLockfile, "lockfile", "", "lockfile `PATH` (env AGENTGATE_LOCKFILE; default ./agentgate.lock)")
	pf.StringVar(&a.flagSnapshot, "snapshot", "", "snapshot `PATH`, the lockfile's plaintext companion used for word diffs (env AGENTGATE_SNAPSHOT; default: agentgate.snapshot.json beside the lockfile)")
	pf.DurationVar(&a.flagTimeout, "timeout", 0, "per-server `DURATION` to start, handshake and list every page (env AGENTGATE_TIMEOUT; default 30s)")
	for i, b := range boundFlags {
		pf.Var(&a.flagLimits[i], strings.TrimPrefix(b.kind.Flag(), "--"), fmt.Sprintf("the most one server may send in %s (env %s; default %s)", b.what, b.env, readbound.FormatSize(b.def)))
	}

	root.AddCommand(a.lockCmd(), a.diffCmd(), a.ciCmd())
	cli.Setup(root, env, versionInfo(d))
	return root
}

// boundFlags are the read bounds every command takes, in the order of opts.flagLimits.
var boundFlags = [3]struct {
	kind readbound.Kind
	what string
	env  string
	def  int64
}{
	{readbound.KindMessage, "one message (an HTTP body, a server-sent event, a stdio line)", "AGENTGATE_MAX_MESSAGE_BYTES", readbound.DefaultMessageBytes},
	{readbound.KindListing, "all pages of one list", "AGENTGATE_MAX_LISTING_BYTES", readbound.DefaultListingBytes},
	{readbound.KindServer, "a whole listing session", "AGENTGATE_MAX_SERVER_BYTES", readbound.DefaultServerBytes},
}

// resolve applies flag > environment > default to the shared settings.
func (a *app) resolve(cmd *cobra.Command, needConfig bool) (opts, error) {
	var o opts
	wd, err := a.deps.getwd()
	if err != nil {
		return o, cli.Exit(cli.ExitUsage, fmt.Errorf("cannot read the working directory: %w", err))
	}
	pick := func(flag, envName string) string {
		if cmd.Flags().Changed(flag) {
			v, _ := cmd.Flags().GetString(flag)
			return v
		}
		return a.env.Getenv(envName)
	}
	abs := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(wd, p)
	}
	o.lockfile = pick("lockfile", "AGENTGATE_LOCKFILE")
	if o.lockfile == "" {
		o.lockfile = "agentgate.lock"
	}
	o.snapshot = pick("snapshot", "AGENTGATE_SNAPSHOT")
	if o.snapshot == "" {
		o.snapshot = defaultSnapshot(o.lockfile)
	}
	o.lockfile, o.snapshot = abs(o.lockfile), abs(o.snapshot)

	o.timeout = mcpclient.DefaultTimeout
	if cmd.Flags().Changed("timeout") {
		o.timeout = a.flagTimeout
	} else if v := a.env.Getenv("AGENTGATE_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return o, cli.Usage(cmd, "AGENTGATE_TIMEOUT=%q is not a duration such as 30s", v)
		}
		o.timeout = d
	}
	if o.timeout <= 0 {
		return o, cli.Usage(cmd, "--timeout must be positive, such as 30s")
	}
	sizes := [3]int64{}
	for i, b := range boundFlags {
		sizes[i] = b.def
		if flag := strings.TrimPrefix(b.kind.Flag(), "--"); cmd.Flags().Changed(flag) {
			sizes[i] = int64(a.flagLimits[i])
		} else if v := a.env.Getenv(b.env); v != "" {
			var sz readbound.Size
			if err := sz.Set(v); err != nil {
				return o, cli.Usage(cmd, "%s=%q: %v", b.env, v, err)
			}
			sizes[i] = int64(sz)
		}
	}
	o.limits = readbound.Limits{Message: sizes[0], Listing: sizes[1], Server: sizes[2]}

	if !needConfig {
		return o, nil
	}
	o.config = abs(pick("config", "AGENTGATE_CONFIG"))
	if o.config == "" {
		p, err := mcpclient.FindConfig(wd)
		if err != nil {
			return o, cli.Exit(cli.ExitUsage, err)
		}
		o.config, o.configFound = p, true
	}
	return o, nil
}

// abs resolves path against the working directory.
func (a *app) abs(path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	wd, err := a.deps.getwd()
	if err != nil {
		return path
	}
	return filepath.Join(wd, path)
}

// defaultSnapshot is agentgate.snapshot.json for agentgate.lock, X.snapshot.json for X.lock.
func defaultSnapshot(lock string) string {
	dir, base := filepath.Split(lock)
	return filepath.Join(dir, strings.TrimSuffix(base, ".lock")+".snapshot.json")
}

// rel shows path relative to the working directory when it is inside it.
func (a *app) rel(path string) string {
	wd, err := a.deps.getwd()
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

func (a *app) loadConfig(o opts) (*mcpclient.Config, error) {
	cfg, err := mcpclient.LoadConfig(o.config, mcpclient.ConfigOptions{Getenv: a.env.Getenv})
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, errors.New(strings.ReplaceAll(err.Error(), o.config, a.rel(o.config))))
	}
	for _, name := range cfg.Skipped {
		a.warnf("%s: server %q is disabled; not listed", a.rel(o.config), name)
	}
	return cfg, nil
}

// requireServers refuses a configuration with no enabled server: a lockfile of nothing
// would pin nothing, and 'ci' would then pass whatever the servers become.
func (a *app) requireServers(o opts, cfg *mcpclient.Config) error {
	if len(cfg.Servers) > 0 {
		return nil
	}
	where := a.rel(o.config)
	if o.configFound {
		where += fmt.Sprintf(" (the first of %s in %s)", strings.Join(mcpclient.DefaultConfigNames, ", "), filepath.Dir(o.config))
	}
	what := "no MCP server"
	if len(cfg.Skipped) > 0 {
		what = fmt.Sprintf("no enabled MCP server (disabled: %s)", strings.Join(cfg.Skipped, ", "))
	}
	return cli.Exit(cli.ExitUsage, fmt.Errorf("nothing to lock: %s lists %s; add one under %q, or pass --config PATH", where, what, string(cfg.Format)))
}

// The bounds on the files agentgate reads: far above any real lockfile (100,000 tools
// make about 30 MB) or snapshot, far below what would hurt.
const (
	maxLockfileBytes = 64 << 20
	maxSnapshotBytes = 256 << 20
)

// readLocal reads a lockfile or snapshot as untrusted input (localfile): a regular file
// only, through no symbolic link out of the repository, at most max bytes.
func readLocal(path string, max int64) ([]byte, error) { return localfile.Read(path, max) }

// readLockfile reads and parses the lockfile; missing reports whether it does not exist.
func (a *app) readLockfile(o opts) (lf *lockfile.Lockfile, missing bool, err error) {
	data, err := readLocal(o.lockfile, maxLockfileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot read: %v", a.rel(o.lockfile), unwrapPath(err)))
	}
	lf, warns, err := lockfile.Parse(data)
	if err != nil {
		return nil, false, cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %s", a.rel(o.lockfile), strings.TrimPrefix(err.Error(), "invalid lockfile: ")))
	}
	for _, w := range warns {
		a.warnf("%s: %s", a.rel(o.lockfile), w)
	}
	return lf, false, nil
}

// readLockfileV2 reads and parses a version 2 lockfile.
func (a *app) readLockfileV2(o opts) (*lockfile.LockfileV2, error) {
	data, err := readLocal(o.lockfile, maxLockfileBytes)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot read: %v", a.rel(o.lockfile), unwrapPath(err)))
	}
	lf, warns, err := lockfile.ParseV2(data)
	if err != nil {
		return nil, cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %s", a.rel(o.lockfile), strings.TrimPrefix(err.Error(), "invalid lockfile: ")))
	}
	for _, w := range warns {
		a.warnf("%s: %s", a.rel(o.lockfile), w)
	}
	return lf, nil
}

// lockfileVersion returns the version of the lockfile, 0 when it does not exist.
func (a *app) lockfileVersion(o opts) (int, error) {
	data, err := readLocal(o.lockfile, maxLockfileBytes)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, cli.Exit(cli.ExitUsage, fmt.Errorf("%s: cannot read: %v", a.rel(o.lockfile), unwrapPath(err)))
	}
	v, err := lockfile.ReadVersion(data)
	if err != nil {
		return 0, cli.Exit(cli.ExitUsage, fmt.Errorf("%s: %s", a.rel(o.lockfile), strings.TrimPrefix(err.Error(), "invalid lockfile: ")))
	}
	return v, nil
}

// readSnapshot returns the snapshot, or nil if it is missing or unreadable (it only adds
// detail to diffs, so a problem with it is a warning).
func (a *app) readSnapshot(o opts) lockfile.Surface {
	data, err := readLocal(o.snapshot, maxSnapshotBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		a.warnf("%s: cannot read: %v; diffs will not show the locked words", a.rel(o.snapshot), unwrapPath(err))
		return nil
	}
	s, warns, err := lockfile.ParseSnapshot(data)
	if err != nil {
		a.warnf("%s: %v; diffs will not show the locked words", a.rel(o.snapshot), err)
		return nil
	}
	for _, w := range warns {
		a.warnf("%s: %s", a.rel(o.snapshot), w)
	}
	return s
}

func (a *app) warnf(format string, args ...any) {
	fmt.Fprintf(a.env.Stderr, "agentgate: warning: "+format+"\n", args...)
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// maxParallel bounds how many servers are listed at once.
const maxParallel = 4

// listed is the outcome of listing one server.
type listed struct {
	name  string
	defs  []lockfile.Definition
	tools int
	notes []string
	err   error
}

// listAll lists servers concurrently (at most maxParallel at a time) and returns the results
// in the order given. Progress goes to stderr only when it is a terminal.
func (a *app) listAll(ctx context.Context, o opts, servers []mcpclient.Server) []listed {
	out := inParallel(a, servers, " servers", true, func(s mcpclient.Server) listed { return a.listOne(ctx, o, s) })
	for _, r := range out {
		for _, n := range r.notes {
			a.warnf("server %q: %s", r.name, n)
		}
	}
	return out
}

// inParallel calls one on every job, at most maxParallel at a time, and returns the results
// in the order of jobs. When stderr is a terminal it shows "listed done/total" followed by
// unit, from the start when fromZero and otherwise from the first job done, and clears the
// line at the end.
func inParallel[J, R any](a *app, jobs []J, unit string, fromZero bool, one func(J) R) []R {
	out := make([]R, len(jobs))
	progress := cli.IsTerminal(a.env.Stderr)
	var (
		mu   sync.Mutex
		done int
		wg   sync.WaitGroup
	)
	report := func() {
		if progress {
			fmt.Fprintf(a.env.Stderr, "\ragentgate: listed %d/%d%s", done, len(jobs), unit)
		}
	}
	if fromZero {
		report()
	}
	sem := make(chan struct{}, maxParallel)
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i] = one(j)
			mu.Lock()
			done++
			report()
			mu.Unlock()
		}()
	}
	wg.Wait()
	if progress {
		fmt.Fprint(a.env.Stderr, "\r\033[K")
	}
	return out
}

// listOptions are the client options every listing starts from.
func (a *app) listOptions(o opts) mcpclient.Options {
	return mcpclient.Options{
		Timeout:       o.timeout,
		Limits:        o.limits,
		Environ:       a.deps.environ,
		ClientName:    "agentgate",
		ClientVersion: a.deps.version,
	}
}

func (a *app) listOne(ctx context.Context, o opts, s mcpclient.Server) listed {
	l, err := a.deps.list(ctx, s, a.listOptions(o))
	if err != nil {
		return listed{name: s.Name, err: err}
	}
	r := listed{name: s.Name, tools: len(l.Tools), notes: l.Notes}
	for i, t := range l.Tools {
		d, err := lockfile.ParseTool(t.Raw)
		if err != nil {
			return listed{name: s.Name, err: fmt.Errorf("server %q: tool %d (%q) cannot be locked: %v", s.Name, i+1, t.Name, err)}
		}
		r.defs = append(r.defs, d)
	}
	if _, err := lockfile.LockServer(r.defs); err != nil {
		return listed{name: s.Name, err: fmt.Errorf("server %q: %v", s.Name, err)}
	}
	return r
}

// outcome is the result of one listing, as failures sees it.
type outcome interface {
	// failure is why the listing failed, or nil.
	failure() error
}

func (r listed) failure() error { return r.err }

// failures prints every listing error on its own line and returns the exit-2 error, or nil:
// "N of M <failed>; <what>".
func failures[R outcome](a *app, results []R, failed, what string) error {
	n := 0
	for _, r := range results {
		if err := r.failure(); err != nil {
			n++
			line := strings.ReplaceAll(err.Error(), "\n", "; ")
			a.failed = append(a.failed, line)
			fmt.Fprintf(a.env.Stderr, "agentgate: %s\n", line)
		}
	}
	if n == 0 {
		return nil
	}
	return cli.Exit(cli.ExitUsage, fmt.Errorf("%d of %d %s; %s", n, len(results), failed, what))
}

// selectServers returns the configured servers to list: all, or just name. A name in
// neither the config nor the lockfile (inLock says whether it is there) is a usage error; a
// name only in the lockfile gives no servers.
func (a *app) selectServers(cmd *cobra.Command, o opts, cfg *mcpclient.Config, name string, inLock bool) ([]mcpclient.Server, error) {
	if name == "" {
		return cfg.Servers, nil
	}
	if s, ok := cfg.Server(name); ok {
		return []mcpclient.Server{s}, nil
	}
	if !inLock {
		return nil, cli.Usage(cmd, "server %q is neither in %s (servers: %s) nor in %s", name, a.rel(o.config), namesOrNone(cfg.Names()), a.rel(o.lockfile))
	}
	return nil, nil
}

// hasKey reports whether m has the key k.
func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// writeFileAtomic writes data to path through a temporary file in the same directory, so a
// reader never sees half a lockfile.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// versionInfo is what --version and `version [--json]` print: agentgate writes lockfile
// version 2 (a new lockfile; an existing one keeps its version) and reads versions 1 and 2.
func versionInfo(d deps) cli.VersionInfo {
	return cli.VersionInfo{Name: "agentgate", Version: d.version, Commit: d.commit,
		Extra: map[string]any{"lockfileVersion": lockfile.Version2, "lockfileVersions": lockfile.Versions},
		Note:  fmt.Sprintf("writes lockfileVersion %d, reads %s", lockfile.Version2, joinInts(lockfile.Versions))}
}

// joinInts is "1 and 2", "1, 2 and 3".
func joinInts(ns []int) string {
	s := ""
	for i, n := range ns {
		switch {
		case i == 0:
		case i == len(ns)-1:
			s += " and "
		default:
			s += ", "
		}
		s += fmt.Sprint(n)
	}
	return s
}
