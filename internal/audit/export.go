package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentgate-dev/agentgate/internal/warrant"
)

// MaxExportLine bounds one line of an export (one entry).
const MaxExportLine = 4 << 20

// exportLine is one line of `toolwarrant audit export`: one entry, JSON, in sequence
// order. body is the canonical body itself (a JSON object, so the line stays readable);
// signature is base64.
type exportLine struct {
	Seq       int64           `json:"seq"`
	Type      string          `json:"type"`
	Actor     string          `json:"actor"`
	At        string          `json:"at"`
	PrevHash  string          `json:"prevHash"`
	Hash      string          `json:"hash"`
	KeyID     string          `json:"keyId"`
	Signature []byte          `json:"signature"`
	Body      json.RawMessage `json:"body"`
}

// WriteExport writes records as JSON Lines.
func WriteExport(w io.Writer, records []warrant.AuditRecord) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for _, r := range records {
		if err := enc.Encode(exportLine{r.Seq, r.Type, r.Actor, r.At.UTC().Format(time.RFC3339Nano), r.PrevHash, r.Hash, r.KeyID, r.Signature, r.Body}); err != nil {
			return fmt.Errorf("export entry %d: %w", r.Seq, err)
		}
	}
	return bw.Flush()
}

// ParseExport reads an export strictly: every line one JSON object with exactly the
// export's fields, nothing else. Errors name the line. The body bytes are kept exactly as
// they appear in the line, so a body that is not canonical fails verification rather
// than being repaired here.
func ParseExport(r io.Reader) ([]warrant.AuditRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxExportLine)
	var out []warrant.AuditRecord
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var l exportLine
		d := json.NewDecoder(bytes.NewReader(line))
		d.DisallowUnknownFields()
		if err := d.Decode(&l); err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		if d.More() {
			return nil, fmt.Errorf("line %d: more than one JSON value", n)
		}
		at, err := time.Parse(time.RFC3339Nano, l.At)
		if err != nil {
			return nil, fmt.Errorf("line %d: at: %v", n, err)
		}
		if len(l.Body) == 0 || l.Body[0] != '{' {
			return nil, fmt.Errorf("line %d: body is not a JSON object", n)
		}
		out = append(out, warrant.AuditRecord{Seq: l.Seq, Type: l.Type, Actor: l.Actor, At: at, PrevHash: l.PrevHash, Hash: l.Hash,
			KeyID: l.KeyID, Signature: l.Signature, Body: bytes.Clone(l.Body)})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read export: %w", err)
	}
	return out, nil
}
