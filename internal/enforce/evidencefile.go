package enforce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// EvidenceDoc is the JSON evidence file: a static stand-in for the catalog, for tests,
// demos and deployments that publish approvals as a file. Field names are stable:
//
//	{"servers": [{"name": "everything", "url": "http://127.0.0.1:3001/mcp",
//	  "tools": [{"name": "echo", "approved": "sha256:…", "crawled": "sha256:…"}]}]}
type EvidenceDoc struct {
	Servers []EvidenceServer `json:"servers"`
}

// EvidenceServer is one upstream in an [EvidenceDoc].
type EvidenceServer struct {
	// Name is the server's (and the gateway target's) name.
	Name string `json:"name"`
	// URL is the upstream's Streamable HTTP endpoint, used by emit.
	URL string `json:"url,omitempty"`
	// Tools are the tools the catalog knows, with their digests.
	Tools []EvidenceTool `json:"tools"`
}

// EvidenceTool is one tool in an [EvidenceServer].
type EvidenceTool struct {
	Name string `json:"name"`
	// Approved is the approved digest ("" for none); Crawled what the last crawl saw.
	Approved string `json:"approved,omitempty"`
	Crawled  string `json:"crawled,omitempty"`
}

// ParseEvidence parses and validates an evidence document: unknown fields, duplicate
// server or tool names and malformed digests are errors (all reported together).
func ParseEvidence(data []byte) (*EvidenceDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var doc EvidenceDoc
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	if dec.More() {
		return nil, errors.New("evidence: trailing data after the JSON document")
	}
	var errs []error
	servers := map[string]bool{}
	for _, s := range doc.Servers {
		if s.Name == "" || servers[s.Name] {
			errs = append(errs, fmt.Errorf("server name %q is empty or given twice", s.Name))
		}
		servers[s.Name] = true
		tools := map[string]bool{}
		for _, t := range s.Tools {
			if t.Name == "" || tools[t.Name] {
				errs = append(errs, fmt.Errorf("server %q: tool name %q is empty or given twice", s.Name, t.Name))
			}
			tools[t.Name] = true
			for _, d := range []string{t.Approved, t.Crawled} {
				if _, ok := parseDigest(d); d != "" && !ok {
					errs = append(errs, fmt.Errorf("server %q tool %q: %q is not a digest (sha256: and 64 lower-case hex digits)", s.Name, t.Name, d))
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("evidence: %w", errors.Join(errs...))
	}
	return &doc, nil
}

// Server returns the named server, or false.
func (d *EvidenceDoc) Server(name string) (EvidenceServer, bool) {
	i := slices.IndexFunc(d.Servers, func(s EvidenceServer) bool { return s.Name == name })
	if i < 0 {
		return EvidenceServer{}, false
	}
	return d.Servers[i], true
}

// Approved returns the names of the server's approved tools, sorted.
func (s EvidenceServer) Approved() []string {
	var out []string
	for _, t := range s.Tools {
		if t.Approved != "" {
			out = append(out, t.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Marshal returns the document as indented JSON, servers and tools sorted by name.
func (d *EvidenceDoc) Marshal() []byte {
	c := EvidenceDoc{Servers: slices.Clone(d.Servers)}
	slices.SortFunc(c.Servers, func(a, b EvidenceServer) int { return strings.Compare(a.Name, b.Name) })
	for i := range c.Servers {
		c.Servers[i].Tools = slices.Clone(c.Servers[i].Tools)
		slices.SortFunc(c.Servers[i].Tools, func(a, b EvidenceTool) int { return strings.Compare(a.Name, b.Name) })
		if c.Servers[i].Tools == nil {
			c.Servers[i].Tools = []EvidenceTool{}
		}
	}
	b, _ := json.MarshalIndent(c, "", "  ")
	return append(b, '\n')
}

// EvidenceFile is a [Source] over an evidence file, re-read on every refresh (so editing
// the file, atomically by rename, takes effect within one refresh interval). An unreadable
// or invalid file is ErrUnavailable: the processor keeps its last snapshot until stale.
type EvidenceFile struct {
	Path string

	mu   sync.Mutex
	last []byte
	doc  *EvidenceDoc
}

var _ Source = (*EvidenceFile)(nil)

// Snapshot reads the file and returns the named server's evidence.
func (f *EvidenceFile) Snapshot(ctx context.Context, server string) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	readAt := time.Now()
	data, err := os.ReadFile(f.Path)
	if err != nil {
		return Snapshot{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	f.mu.Lock()
	doc := f.doc
	if doc == nil || !bytes.Equal(data, f.last) {
		if doc, err = ParseEvidence(data); err != nil {
			f.mu.Unlock()
			return Snapshot{}, fmt.Errorf("%w: %s: %w", ErrUnavailable, f.Path, err)
		}
		f.doc, f.last = doc, data
	}
	f.mu.Unlock()
	s, ok := doc.Server(server)
	if !ok {
		return Snapshot{}, fmt.Errorf("server %q: %w", server, ErrUnknownServer)
	}
	out := Snapshot{Server: server, Tools: make(map[string]ToolEvidence, len(s.Tools)), ReadAt: readAt}
	for _, t := range s.Tools {
		out.Tools[t.Name] = ToolEvidence{Approved: t.Approved, Crawled: t.Crawled}
	}
	return out, nil
}

// JSONLRecorder is a [Recorder] that appends each observation as one JSON line to a file
// (created 0600), and a [DecisionRecorder] that appends each window of decision records as
// one line {"decisions": {...}}: for deployments on the evidence file or a read-only
// catalog, where no audit log takes them.
type JSONLRecorder struct {
	Path string
	mu   sync.Mutex
}

// RecordDecisions appends one window of decision records as one line.
func (r *JSONLRecorder) RecordDecisions(_ context.Context, b DecisionBatch) error {
	line, err := json.Marshal(struct {
		Decisions DecisionBatch `json:"decisions"`
	}{b})
	if err != nil {
		return err
	}
	return r.append(append(line, '\n'))
}

// Record appends the batch.
func (r *JSONLRecorder) Record(_ context.Context, batch []Observation) error {
	var buf bytes.Buffer
	for _, o := range batch {
		line, err := json.Marshal(struct {
			Server   string          `json:"server"`
			Tool     string          `json:"tool"`
			Kind     ObservationKind `json:"kind"`
			Digest   string          `json:"digest,omitempty"`
			Approved string          `json:"approved,omitempty"`
			Refused  string          `json:"refused,omitempty"`
			At       time.Time       `json:"at"`
		}{o.Server, o.Tool, o.Kind, o.Digest, o.Approved, o.Refused, o.At.UTC()})
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	return r.append(buf.Bytes())
}

func (r *JSONLRecorder) append(b []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
