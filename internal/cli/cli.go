package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes shared by all binaries (docs/cli.md).
const (
	// ExitOK means success: no drift, verified, done.
	ExitOK = 0
	// ExitFound means the check ran and found something (drift, problems, failed verification).
	ExitFound = 1
	// ExitUsage means the command could not run: a usage error (the same code in every
	// binary and every command), unreadable input, an unreachable server, a refused
	// configuration.
	ExitUsage = 2
)

// ExitError is an error that selects the process exit code. A nil Err with a non-zero
// Code exits quietly (the command has already reported what it found).
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit wraps err so that the process exits with code.
func Exit(code int, err error) error { return &ExitError{Code: code, Err: err} }

// Found reports that a check found something: exit 1 with no extra message.
func Found() error { return &ExitError{Code: ExitFound} }

// Env is what a main hands to its command tree instead of touching globals, so tests can run
// the whole CLI in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment; tests pass a map-backed function.
	Getenv func(string) string
}

// OSEnv returns the process environment.
func OSEnv() Env {
	return Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
}

// IsTerminal reports whether w is a character device (a terminal), for progress output.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Main is every binary's main: the process environment, a context that SIGINT and SIGTERM
// cancel (so in-flight work can finish: servers started are stopped, nothing half-written
// is kept), the command line run, and the exit code. The first signal cancels; from then on
// the default disposition is back, so a second signal ends the process at once.
func Main(newRoot func(Env) *cobra.Command) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	env := OSEnv()
	code := Run(ctx, newRoot(env), os.Args[1:], env)
	stop()
	os.Exit(code)
}

// Setup gives root the conventions every binary shares (docs/cli.md): a `version` command
// and a --version flag that print info, no completion command in the command list (it
// still works), and errors and usage printed by [Run] alone. Call it after the other
// commands are added.
func Setup(root *cobra.Command, env Env, info VersionInfo) {
	root.SilenceErrors = true
	root.SilenceUsage = true
	root.CompletionOptions.HiddenDefaultCmd = true
	root.Version = info.Line()
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(versionCmd(env, info))
}

// Run executes root with args and returns the exit code. Errors are printed to env.Stderr as
// one line, "NAME: message"; usage errors also point at the --help of the command they
// concern.
func Run(ctx context.Context, root *cobra.Command, args []string, env Env) int {
	root.SetArgs(args)
	root.SetIn(env.Stdin)
	root.SetOut(env.Stdout)
	root.SetErr(env.Stderr)
	root.SilenceErrors = true
	root.SilenceUsage = true
	usage := false
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		usage = true
		return fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	})
	c, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(env.Stderr, "%s: %s\n", root.Name(), oneLine(ee.Err.Error()))
		}
		return ee.Code
	}
	if !usage && isCobraUsageError(err) {
		if c == nil {
			c = root
		}
		err = fmt.Errorf("%w (see '%s --help')", err, c.CommandPath())
	}
	fmt.Fprintf(env.Stderr, "%s: %s\n", root.Name(), oneLine(err.Error()))
	return ExitUsage
}

// isCobraUsageError recognises the errors cobra itself produces for bad arguments.
func isCobraUsageError(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires at most", "received ", "invalid argument"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.ReplaceAll(s, "\n", "; ")
}

// Usage returns an error that exits 2 with a pointer to the command's help.
func Usage(cmd *cobra.Command, format string, a ...any) error {
	return Exit(ExitUsage, fmt.Errorf("%s (see '%s --help')", fmt.Sprintf(format, a...), cmd.CommandPath()))
}

// ExitCodes formats the "Exit codes" section of a command's help, the form every command
// uses and the test of docs/cli.md reads: 0 ok; 1 found (left out when ""); 2 couldNot
// (default "could not run: usage error"). Continue a long text on a new line indented by
// five spaces.
func ExitCodes(ok, found, couldNot string) string {
	if couldNot == "" {
		couldNot = "could not run: usage error"
	}
	s := "\n\nExit codes:\n  0  " + ok + "\n"
	if found != "" {
		s += "  1  " + found + "\n"
	}
	return s + "  2  " + couldNot
}

// Count is n and the noun, singular for 1 and plural otherwise ("1 tool", "2 tools");
// plural "" adds an s.
func Count(n int, singular, plural string) string {
	if plural == "" {
		plural = singular + "s"
	}
	if n == 1 {
		return "1 " + singular
	}
	return fmt.Sprintf("%d %s", n, plural)
}
