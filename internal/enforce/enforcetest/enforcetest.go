// Package enforcetest holds what the tests of the enforcement transports (extmcp,
// mcpproxy, agentcore) share: an in-memory source of approvals, server-everything's
// captured listing, and the digest the decision core computes.
package enforcetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/enforce"
)

// Source is an in-memory enforce.Source whose reads can be made to fail.
type Source struct {
	mu    sync.Mutex
	snaps map[string]map[string]enforce.ToolEvidence
	err   error
}

// NewSource returns an empty Source.
func NewSource() *Source { return &Source{snaps: map[string]map[string]enforce.ToolEvidence{}} }

// Set sets one tool's evidence (and makes the server known).
func (m *Source) Set(server, tool string, ev enforce.ToolEvidence) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snaps[server] == nil {
		m.snaps[server] = map[string]enforce.ToolEvidence{}
	}
	m.snaps[server][tool] = ev
}

// Fail makes every read fail with err (nil: reads succeed again).
func (m *Source) Fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// Snapshot implements enforce.Source.
func (m *Source) Snapshot(_ context.Context, server string) (enforce.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return enforce.Snapshot{}, m.err
	}
	tools, ok := m.snaps[server]
	if !ok {
		return enforce.Snapshot{}, enforce.ErrUnknownServer
	}
	return enforce.Snapshot{Server: server, Tools: maps.Clone(tools)}, nil
}

// LiveDigest is the digest the decision core computes for a tool object as listed.
func LiveDigest(tb testing.TB, raw []byte) string {
	tb.Helper()
	c, err := canon.Transform(raw)
	if err != nil {
		tb.Fatal(err)
	}
	s := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(s[:])
}

// EverythingFile is the path of server-everything's captured tools/list result
// (internal/enforce/testdata; TestCaptureEverything -update recaptures it).
func EverythingFile() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "testdata", "everything-tools.json")
}

// Everything returns the captured server-everything listing and its tools' raw bytes.
func Everything(tb testing.TB) ([]byte, []json.RawMessage) {
	tb.Helper()
	data, err := os.ReadFile(EverythingFile())
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		tb.Fatal(err)
	}
	return bytes.TrimSuffix(data, []byte("\n")), doc.Tools
}

// ToolName is the "name" of a tool object.
func ToolName(tb testing.TB, raw []byte) string {
	tb.Helper()
	var v struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	return v.Name
}

// Names lists the tool names of a tools/list result.
func Names(tb testing.TB, result []byte) []string {
	tb.Helper()
	var doc struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &doc); err != nil {
		tb.Fatalf("result is not JSON: %v\n%s", err, result)
	}
	var out []string
	for _, x := range doc.Tools {
		out = append(out, x.Name)
	}
	return out
}

// Tools builds n tool objects from server-everything's real ones, renamed NAME-0000 and on
// to stay unique, and sets their evidence in src for server: crawled as listed, and
// approved for nine in ten (every tenth, i%10 == 9, is unapproved).
func Tools(tb testing.TB, src *Source, server string, n int) []json.RawMessage {
	tb.Helper()
	_, tools := Everything(tb)
	out := make([]json.RawMessage, n)
	for i := range n {
		base := tools[i%len(tools)]
		name := ToolName(tb, base)
		renamed := fmt.Sprintf("%s-%04d", name, i)
		raw := bytes.Replace(base, []byte(`"name":"`+name+`"`), []byte(`"name":"`+renamed+`"`), 1)
		out[i] = raw
		dg := LiveDigest(tb, raw)
		ev := enforce.ToolEvidence{Crawled: dg}
		if i%10 != 9 {
			ev.Approved = dg
		}
		src.Set(server, renamed, ev)
	}
	return out
}

// Listing is Tools wrapped as a gateway's merged tools/list result.
func Listing(tb testing.TB, src *Source, server string, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	buf.WriteString(`{"tools":[`)
	for i, raw := range Tools(tb, src, server, n) {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(raw)
	}
	buf.WriteString(`],"ttlMs":0,"cacheScope":"private"}`)
	return buf.Bytes()
}
