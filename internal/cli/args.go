package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// The positional-argument checks of every command. Unlike cobra's own ("accepts 2 arg(s),
// received 1"), their errors name the arguments the command takes, as its Use line does,
// and point at that command's --help; they exit 2 like every usage error.

// NoArgs refuses any positional argument; on a command with subcommands, an argument is an
// unknown subcommand.
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.HasSubCommands() {
		return Usage(cmd, "unknown command %q for %q", args[0], cmd.CommandPath())
	}
	return Usage(cmd, "%s takes no arguments; got %q", cmd.CommandPath(), args[0])
}

// ExactArgs wants exactly n positional arguments.
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n {
			return nil
		}
		return Usage(cmd, "%s takes %s; got %s", cmd.CommandPath(), wanted(cmd, n, n), got(args))
	}
}

// RangeArgs wants min to max positional arguments.
func RangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) >= lo && len(args) <= hi {
			return nil
		}
		return Usage(cmd, "%s takes %s; got %s", cmd.CommandPath(), wanted(cmd, lo, hi), got(args))
	}
}

// wanted says how many arguments a command takes and, from its Use line, which.
func wanted(cmd *cobra.Command, lo, hi int) string {
	var names []string
	for _, w := range strings.Fields(cmd.Use)[1:] {
		w = strings.Trim(w, "[]")
		if w == "" || strings.HasPrefix(w, "-") || strings.HasPrefix(w, "(") || w != strings.ToUpper(w) {
			break
		}
		names = append(names, w)
	}
	var n string
	switch {
	case lo == hi:
		n = Count(lo, "argument", "")
	default:
		n = fmt.Sprintf("%d to %d arguments", lo, hi)
	}
	if len(names) > 0 {
		n += ", " + strings.Join(names, " ")
	}
	return n
}

func got(args []string) string {
	if len(args) == 0 {
		return "none"
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("%d: %s", len(args), strings.Join(q, " "))
}
