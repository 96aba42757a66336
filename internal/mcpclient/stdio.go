package mcpclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentgate-dev/agentgate/internal/readbound"
	"github.com/agentgate-dev/agentgate/internal/textguard"
)

// Defaults for the stdio transport's tolerance of what servers print.
const (
	// DefaultMaxSkippedLines bounds the non-JSON lines skipped on a server's stdout.
	DefaultMaxSkippedLines = 1000
)

// stdioTransport runs a command and speaks newline-delimited JSON-RPC over its stdin and
// stdout like the SDK's CommandTransport, but reads stdout through a filter that skips, logs
// and counts lines that are not JSON (a startup banner, a stray print) instead of failing
// the whole session on the first one, as TypeScript SDK clients do.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	filter    *lineFilter
	// startErr is why the command could not be started, for the one error that reports it
	// (the session's own error repeats the server's name).
	startErr error
	// ctx is the listing's: once it is done (a signal, the timeout), the child is given
	// only cancelGrace to exit on its own before the signals.
	ctx context.Context
}

// cancelGrace is how long a child whose listing was cancelled gets at each step of its
// stop, so that a signalled command ends within a second.
const cancelGrace = 150 * time.Millisecond

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		t.startErr = err
		return nil, err
	}
	t.filter.r = bufio.NewReaderSize(stdout, 64*1024)
	// The filter bounds every line by the message bound first, naming it; the SDK's bound
	// stays above it.
	sdkLine := int(min(t.filter.budget.Limits().Message+1, 1<<40))
	return (&mcp.IOTransport{MaxLineLength: sdkLine, Reader: io.NopCloser(t.filter), Writer: &childStdin{cmd: t.cmd, stdin: stdin, terminate: t.terminate, ctx: t.ctx}}).Connect(ctx)
}

// childStdin is the child's stdin; closing it stops the child as the MCP specification says:
// close stdin, wait, SIGTERM, wait, SIGKILL.
type childStdin struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
	ctx       context.Context
}

func (c *childStdin) Write(p []byte) (int, error) { return c.stdin.Write(p) }

func (c *childStdin) Close() error {
	_ = c.stdin.Close()
	done := make(chan struct{})
	go func() {
		_ = c.cmd.Wait() // the exit status of a server we are stopping says nothing useful
		close(done)
	}()
	grace := c.terminate
	if c.ctx != nil && c.ctx.Err() != nil {
		grace = min(grace, cancelGrace)
	}
	wait := func() bool {
		select {
		case <-done:
			return true
		case <-time.After(grace):
			return false
		}
	}
	if wait() {
		return nil
	}
	if c.cmd.Process.Signal(syscall.SIGTERM) == nil && wait() {
		return nil
	}
	_ = c.cmd.Process.Kill()
	if wait() {
		return nil
	}
	return errors.New("the server process did not exit after SIGKILL")
}

// lineFilter passes through the lines of r that are JSON values and skips the rest.
type lineFilter struct {
	r      *bufio.Reader
	max    int
	logger *slog.Logger
	server string
	budget *readbound.Budget // every byte of stdout is charged; a line is one message

	buf     []byte // the rest of the current line to hand out
	pending error  // the read error to return once buf is handed out

	mu      sync.Mutex
	skipped int
	first   string // the first skipped line, escaped and shortened
	fatal   error  // set when too many lines were skipped
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.buf) == 0 {
		if f.pending != nil {
			return 0, f.pending
		}
		line, err := f.readLine()
		f.pending = err
		trimmed := bytes.TrimSpace(line)
		switch {
		case len(trimmed) == 0:
		case (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid(trimmed):
			f.buf = append(trimmed, '\n')
		default:
			if serr := f.skip(trimmed); serr != nil {
				f.pending = serr
				return 0, serr
			}
		}
	}
	n := copy(p, f.buf)
	f.buf = f.buf[n:]
	return n, nil
}

// readLine reads one line, without its newline, of at most the message bound.
func (f *lineFilter) readLine() ([]byte, error) {
	var line []byte
	limit := f.budget.Limits().Message
	for {
		chunk, err := f.r.ReadSlice('\n')
		if cerr := f.budget.Charge(len(chunk)); cerr != nil {
			return nil, cerr
		}
		line = append(line, chunk...)
		if int64(len(line)) > limit {
			return nil, f.budget.Fail(&readbound.Error{Kind: readbound.KindMessage, Limit: limit, What: "a line on the server's stdout"})
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

func (f *lineFilter) skip(line []byte) error {
	f.mu.Lock()
	f.skipped++
	n := f.skipped
	if f.first == "" {
		f.first = excerpt(string(line), 120)
	}
	f.mu.Unlock()
	f.logger.Warn("skipped a line on stdout that is not JSON-RPC", slog.String("server", f.server), slog.Int("count", n),
		slog.String("line", excerpt(string(line), 120)))
	if n > f.max {
		err := fmt.Errorf("%w: more than %d lines on stdout that are not JSON-RPC (the first: %s); a stdio server must write only MCP messages to stdout", ErrProtocol, f.max, f.firstSkipped())
		f.mu.Lock()
		f.fatal = err
		f.mu.Unlock()
		return err
	}
	return nil
}

// err returns the error that ended the filter, if it gave up.
func (f *lineFilter) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fatal
}

func (f *lineFilter) stats() (int, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.skipped, f.first
}

func (f *lineFilter) firstSkipped() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.first
}

// excerpt shows s on one line, with invisible and control characters escaped, cut to about
// n bytes.
func excerpt(s string, n int) string {
	var b bytes.Buffer
runes:
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
		if b.Len() > n {
			b.WriteString("…")
			break runes
		}
	}
	return textguard.Visible(string(bytes.ToValidUTF8(b.Bytes(), []byte("\uFFFD"))))
}
