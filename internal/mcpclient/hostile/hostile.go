// Package hostile is an MCP server over Streamable HTTP that answers tools/list the way
// an attacker would: a body of any size, a server-sent event that never ends, a stream of
// events that never answers, endless fat pages, or no answer at all. It generates what it
// sends as it writes, so a test can send a gigabyte without holding one. Every stream stops
// when the client goes away or after MaxStream bytes or MaxDuration, whichever is first.
//
// For tests and benchmarks on loopback only.
package hostile

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Mode is what the server does with tools/list.
type Mode string

// The modes.
const (
	// Body answers with one JSON body holding one tool whose description is Size bytes.
	Body Mode = "body"
	// EndlessEvent answers with an event stream whose one event never ends.
	EndlessEvent Mode = "endless-event"
	// EndlessStream answers with an event stream of small notifications and no answer.
	EndlessStream Mode = "endless-stream"
	// Pages answers every page with one tool whose description is Size bytes and a next
	// cursor, for Pages pages (0: until the client stops).
	Pages Mode = "pages"
	// Hang never answers tools/list.
	Hang Mode = "hang"
)

// Server is the hostile server; the zero value with a Mode set is ready.
type Server struct {
	Mode Mode
	// Size is the description's size in Body and Pages modes.
	Size int64
	// Pages is the number of pages in Pages mode (0: endless).
	Pages int
	// SSE sends Body and Pages answers as one server-sent event instead of a JSON body.
	SSE bool
	// MaxStream and MaxDuration bound every answer (defaults 8 GiB, 2 minutes).
	MaxStream   int64
	MaxDuration time.Duration

	sent  atomic.Int64
	lists atomic.Int64
}

// Sent is the number of bytes written in tools/list answers so far.
func (s *Server) Sent() int64 { return s.sent.Load() }

// Lists is the number of tools/list requests seen.
func (s *Server) Lists() int64 { return s.lists.Load() }

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Cursor string `json:"cursor"`
	} `json:"params"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if len(req.ID) == 0 {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	switch req.Method {
	case "initialize":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`, req.ID)
	case "tools/list":
		s.lists.Add(1)
		s.list(w, r, req)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, req.ID)
	}
}

func (s *Server) list(w http.ResponseWriter, r *http.Request, req request) {
	maxStream := s.MaxStream
	if maxStream <= 0 {
		maxStream = 8 << 30
	}
	maxDur := s.MaxDuration
	if maxDur <= 0 {
		maxDur = 2 * time.Minute
	}
	deadline := time.Now().Add(maxDur)
	out := &counting{w: w, s: s, left: maxStream, deadline: deadline, done: r.Context().Done()}
	switch s.Mode {
	case Hang:
		select {
		case <-r.Context().Done():
		case <-time.After(maxDur):
		}
	case Body, Pages:
		page := 0
		if req.Params.Cursor != "" {
			page, _ = strconv.Atoi(req.Params.Cursor)
		}
		next := ""
		if s.Mode == Pages && (s.Pages == 0 || page+1 < s.Pages) {
			next = fmt.Sprintf(`,"nextCursor":"%d"`, page+1)
		}
		head := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t%d","inputSchema":{"type":"object"},"description":"`, req.ID, page)
		tail := `"}]` + next + `}}`
		if s.SSE {
			w.Header().Set("Content-Type", "text/event-stream")
			head, tail = "event: message\ndata: "+head, tail+"\n\n"
		} else {
			w.Header().Set("Content-Type", "application/json")
		}
		if out.write([]byte(head)) && out.fill(s.Size) {
			out.write([]byte(tail))
		}
	case EndlessEvent:
		w.Header().Set("Content-Type", "text/event-stream")
		if out.write(fmt.Appendf(nil, `event: message`+"\n"+`data: {"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"t","description":"`, req.ID)) {
			out.fill(maxStream)
		}
	case EndlessStream:
		w.Header().Set("Content-Type", "text/event-stream")
		ev := []byte(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"` + string(filler(200)) + `"}}` + "\n\n")
		for out.write(ev) {
		}
	}
}

func filler(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a'
	}
	return b
}

// counting writes to the client until the budget, the deadline or the client runs out.
type counting struct {
	w        http.ResponseWriter
	s        *Server
	left     int64
	deadline time.Time
	done     <-chan struct{}
}

func (c *counting) write(p []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	if c.left <= 0 || time.Now().After(c.deadline) {
		return false
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.w.Write(p)
	c.left -= int64(n)
	c.s.sent.Add(int64(n))
	return err == nil
}

// fill writes n bytes of 'a' in 64 KiB pieces.
func (c *counting) fill(n int64) bool {
	chunk := filler(64 << 10)
	for n > 0 {
		p := chunk
		if n < int64(len(p)) {
			p = p[:n]
		}
		if !c.write(p) {
			return false
		}
		n -= int64(len(p))
	}
	return true
}
