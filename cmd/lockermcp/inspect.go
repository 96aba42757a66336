package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentgate-dev/agentgate/internal/cli"
	"github.com/agentgate-dev/agentgate/internal/config"
	"github.com/agentgate-dev/agentgate/internal/lockerclient"
)

// Exit codes of inspect, those of the Padlock seed's inspect_pad.py (docs/cli.md): 1 is a
// daemon error, 2 a chain that did not verify. A usage error exits 2 as in every command
// (and as inspect_pad.py's argparse does): nothing was verified either way, and stderr
// (or, for a failed verification, the --json document) says which.
const (
	exitVerified    = 0
	exitDaemonError = 1
	exitNotVerified = 2
)

// headRE is what --expected-head must be: the head hash as the writer got it.
var headRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// defaultURL is the daemon inspect talks to when neither --url nor LOCKER_URL is set.
const defaultURL = "http://127.0.0.1:8000"

// inspectError is the error object of a failed inspect, as the MCP tools report it.
type inspectError struct {
	Status    int             `json:"status"`
	Kind      string          `json:"kind,omitempty"`
	Cause     string          `json:"cause,omitempty"`
	Detail    string          `json:"detail,omitempty"`
	Challenge json.RawMessage `json:"challenge,omitempty"`
}

// inspectReport is inspect's --json document (docs/lockermcp.md).
type inspectReport struct {
	PadID          string                  `json:"pad_id"`
	Verified       bool                    `json:"verified"`
	State          *string                 `json:"state,omitempty"`
	BlockCount     *int                    `json:"block_count,omitempty"`
	TotalBytes     *int                    `json:"total_bytes,omitempty"`
	ServerBytes    *int64                  `json:"server_total_bytes,omitempty"`
	Sealed         *bool                   `json:"sealed,omitempty"`
	SealedAt       *int64                  `json:"sealed_at,omitempty"`
	HeadHash       *string                 `json:"head_hash,omitempty"`
	ServerHeadHash *string                 `json:"server_head_hash,omitempty"`
	Error          *inspectError           `json:"error,omitempty"`
	Integrity      *lockerclient.Integrity `json:"integrity,omitempty"`
}

func newInspect(env cli.Env) *cobra.Command {
	var ticket, ticketFile, url, expected string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect PAD_ID",
		Short: "Read one pad and verify its whole chain",
		Long: `inspect reads a pad's manifest and every block, recomputes the hash chain from
genesis, and prints the state, block count, bytes, sealed status, head and the verification.
Without --expected-head the result is internal consistency only: a pad rewritten with
recomputed hashes would still verify. Pass the head you got from the writer (e.g. the
head_hash locker_deposit returned) to detect that.

The daemon is --url, else LOCKER_URL, else ` + defaultURL + `.
A ticket may start with '-': --ticket=-abc… and --ticket -abc… both work. Command-line
arguments are visible to other local users (ps): prefer --ticket-file FILE (its first
line; "-" reads standard input), or a short-lived read_once ticket.

Exit codes (those of the Padlock seed's inspect_pad.py; docs/cli.md):
  0  verified (internal_consistency_only or trusted_head_match)
  1  daemon error: refused (404, 401, 403 …) or unreachable
  2  not verified: the chain failed verification (nothing of the pad should be trusted),
     or a usage error (bad flag, missing PAD_ID, malformed --expected-head, bad --url);
     stderr says which, and --json prints a document only for a failed verification`,
		Example: `  lockermcp inspect demo-pad-v1 --url http://127.0.0.1:8000 \
    --expected-head 5f77fb573937fa35d50e36ad944a8bd500343bf808d2035b7c4c29a3de5b512b`,
		Args: cli.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			getenv := func(k string) string {
				switch {
				case k == "LOCKER_URL" && cmd.Flags().Changed("url"):
					return url
				case k == "LOCKER_URL" && env.Getenv(k) == "":
					return defaultURL
				}
				return env.Getenv(k)
			}
			cfg, err := config.LoadLockerMCP(getenv)
			if err != nil {
				return cli.Usage(cmd, "refusing to run: %v", err)
			}
			c, err := lockerclient.New(lockerclient.Config{BaseURL: cfg.URL, TicketTransport: cfg.TicketTransport})
			if err != nil {
				return cli.Usage(cmd, "%v", err)
			}
			var exp *string
			if cmd.Flags().Changed("expected-head") {
				// A typo is a usage error, found before the daemon is asked; the MCP tools
				// report a malformed head as a failed verification (docs/spec/padlock-wire.md).
				if !headRE.MatchString(expected) {
					return cli.Usage(cmd, "--expected-head %q is not a head hash: give the 64 lowercase hex digits the writer handed you (the head_hash of its seal)", expected)
				}
				exp = &expected
			}
			if cmd.Flags().Changed("ticket-file") {
				if cmd.Flags().Changed("ticket") {
					return cli.Usage(cmd, "give --ticket or --ticket-file, not both")
				}
				if ticket, err = readTicketFile(ticketFile, env.Stdin); err != nil {
					return cli.Usage(cmd, "%v", err)
				}
			}
			padID := args[0]
			ch, err := c.Read(cmd.Context(), padID, ticket, lockerclient.ReadOptions{ExpectedHead: exp})
			return report(env.Stdout, padID, ch, err, asJSON, daemonHint{url: cfg.URL, ticket: ticket != ""})
		},
	}
	f := cmd.Flags()
	f.StringVar(&ticket, "ticket", "", "read ticket (none needed for demo-pad-v1); visible in ps, see --ticket-file")
	f.StringVar(&ticketFile, "ticket-file", "", "read the ticket from the first line of `FILE` (- for standard input)")
	f.StringVar(&url, "url", "", "daemon base URL (env LOCKER_URL, default "+defaultURL+")")
	f.StringVar(&expected, "expected-head", "", "the head you hold from the writer: 64 lowercase hex")
	f.BoolVar(&asJSON, "json", false, "print one JSON document (docs/lockermcp.md)")
	return cmd
}

// maxTicketFile bounds what --ticket-file reads: a ticket is one short line.
const maxTicketFile = 4 << 10

// readTicketFile returns the first line of path ("-": stdin), trimmed. Errors never
// include the file's content.
func readTicketFile(path string, stdin io.Reader) (string, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("--ticket-file: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxTicketFile+1))
	if err != nil {
		return "", fmt.Errorf("--ticket-file %s: %w", path, err)
	}
	if len(b) > maxTicketFile {
		return "", fmt.Errorf("--ticket-file %s: larger than %d bytes; it should hold one ticket on one line", path, maxTicketFile)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	if line = strings.TrimSpace(line); line == "" {
		return "", fmt.Errorf("--ticket-file %s: the first line is empty; it should hold the ticket", path)
	}
	return line, nil
}

// daemonHint is what inspect needs to say what to do about a daemon error.
type daemonHint struct {
	url    string
	ticket bool // a ticket was given
}

// explain says in one line what the daemon error de means for inspect and what to do; the
// daemon's own detail comes after the status.
func (h daemonHint) explain(padID string, de *lockerclient.DaemonError) error {
	what := fmt.Sprintf("%d: %s", de.Status, de.Detail)
	switch de.Status {
	case 0:
		return fmt.Errorf("cannot reach the Padlock daemon at %s (%s): is it running? Start one with 'make run' or 'lockerd', or point --url (or LOCKER_URL) at yours", h.url, strings.TrimPrefix(de.Detail, "contacting "))
	case 401:
		if !h.ticket {
			return fmt.Errorf("pad %s needs a read ticket (daemon %s): pass the one the writer handed you with --ticket-file FILE (or --ticket)", padID, what)
		}
		return fmt.Errorf("the daemon refused the read ticket for pad %s (%s): check that it is this pad's ticket", padID, what)
	case 403:
		return fmt.Errorf("the daemon refused the read ticket for pad %s (%s): a read_once ticket reads once, and a ticket expires with its pad; ask the writer for a new one", padID, what)
	case 404:
		return fmt.Errorf("the daemon at %s has no pad %s (%s): check the pad id and --url", h.url, padID, what)
	case 410:
		return fmt.Errorf("pad %s has expired (daemon %s)", padID, what)
	}
	return fmt.Errorf("the daemon at %s refused to read pad %s (%s)", h.url, padID, what)
}

// report prints the outcome and returns the exit code as an error.
func report(w io.Writer, padID string, ch *lockerclient.Chain, err error, asJSON bool, hint daemonHint) error {
	rep := inspectReport{PadID: padID}
	var de *lockerclient.DaemonError
	var ve *lockerclient.VerificationError
	code := exitVerified
	switch {
	case errors.As(err, &de):
		code = exitDaemonError
		rep.Error = &inspectError{Status: de.Status, Detail: de.Error(), Challenge: de.Challenge}
	case errors.As(err, &ve):
		code = exitNotVerified
		rep.Error = &inspectError{Kind: "verification_failed", Cause: string(ve.Cause), Detail: ve.Error()}
		rep.Integrity = &ve.Integrity
	case err != nil:
		return cli.Exit(exitDaemonError, fmt.Errorf("reading pad %s from %s: %w", padID, hint.url, err))
	default:
		m := ch.Manifest
		rep.Verified = true
		rep.State, rep.BlockCount, rep.TotalBytes, rep.HeadHash = &m.State, ptr(len(ch.Blocks)), &ch.Bytes, &ch.Head
		rep.Sealed, rep.SealedAt = ptr(m.State == "sealed"), m.SealedAt
		if m.TotalBytes >= 0 {
			rep.ServerBytes = &m.TotalBytes
		}
		rep.ServerHeadHash = &m.HeadHash
		rep.Integrity = &ch.Integrity
	}
	if asJSON {
		b, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr != nil {
			return cli.Exit(exitDaemonError, jerr)
		}
		fmt.Fprintf(w, "%s\n", b)
		switch code {
		case exitVerified:
			return nil
		case exitDaemonError:
			return cli.Exit(code, hint.explain(padID, de))
		}
		return cli.Exit(code, nil)
	}
	if code == exitDaemonError {
		// Nothing was read: the one line on stderr says why, and stdout stays empty.
		return cli.Exit(code, hint.explain(padID, de))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, a...)) }
	row("pad", "%s", padID)
	switch code {
	case exitNotVerified:
		row("chain", "NOT VERIFIED (%s): %s", ve.Cause, ve.Reason)
		row("verdict", "%s: nothing from this pad should be trusted", ve.Integrity.Verdict)
		tw.Flush()
		return cli.Exit(code, nil)
	}
	m := ch.Manifest
	row("state", "%s (daemon's assertion)", m.State)
	row("blocks", "%d", len(ch.Blocks))
	bytes := fmt.Sprintf("%d", ch.Bytes)
	if m.TotalBytes != int64(ch.Bytes) {
		bytes += fmt.Sprintf(" (the daemon asserts %d)", m.TotalBytes)
	}
	row("bytes", "%s", bytes)
	if m.SealedAt != nil {
		row("sealed", "yes, at %s (daemon's assertion)", time.Unix(*m.SealedAt, 0).UTC().Format(time.RFC3339))
	} else {
		row("sealed", "no")
	}
	row("head", "%s (recomputed here)", ch.Head)
	row("chain", "verified: %d of %d blocks recompute from genesis onto the daemon's head", ch.Integrity.BlocksVerified, len(ch.Blocks))
	eh := ch.Integrity.ExpectedHead
	if eh.Supplied {
		row("expected head", "matches: the pad is byte for byte the chain you referenced")
	} else {
		row("expected head", "not supplied: internal consistency only; a rewrite with recomputed hashes would pass")
	}
	row("verdict", "%s", ch.Integrity.Verdict)
	tw.Flush()
	return nil
}

func ptr[T any](v T) *T { return &v }
