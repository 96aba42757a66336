package mcpproxy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseEvent is one server-sent event as read: its exact bytes (raw, the blank line
// included) and its fields.
type sseEvent struct {
	raw  []byte
	id   []byte // nil when the event has no id field
	name []byte // the event field; nil when absent
	data []byte // the data lines joined by "\n"; nil when there are none
	// retry is the raw value of a retry field; nil when absent.
	retry []byte
}

// errEventTooLarge is returned once an event exceeds the reader's bound.
var errEventTooLarge = errors.New("server-sent event too large")

// sseReader reads server-sent events (the WHATWG event stream format) with a bound on each
// event's bytes, enforced while reading.
type sseReader struct {
	br  *bufio.Reader
	max int
}

func newSSEReader(r io.Reader, max int) *sseReader {
	return &sseReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next event, io.EOF at the end of the stream. An event the stream ends
// in the middle of (before its blank line) is not returned: a client discards it too, and
// relaying it unread could pass on a listing no one decided.
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	var raw bytes.Buffer
	var data [][]byte
	for {
		line, err := r.readLine(raw.Len())
		if len(line) > 0 {
			raw.Write(line)
		}
		if err != nil {
			return sseEvent{}, err
		}
		content := bytes.TrimRight(line, "\r\n")
		if len(content) == 0 {
			if raw.Len() == len(line) { // blank lines between events
				raw.Reset()
				continue
			}
			ev.raw = raw.Bytes()
			ev.finish(data)
			return ev, nil
		}
		if content[0] == ':' {
			continue // a comment (keep-alive)
		}
		field, value, _ := bytes.Cut(content, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "data":
			data = append(data, bytes.Clone(value))
		case "id":
			ev.id = bytes.Clone(value)
		case "event":
			ev.name = bytes.Clone(value)
		case "retry":
			ev.retry = bytes.Clone(value)
		}
	}
}

func (ev *sseEvent) finish(data [][]byte) {
	if data != nil {
		ev.data = bytes.Join(data, []byte("\n"))
	}
}

// readLine reads one line (its terminator included: LF, CRLF or CR... as LF-terminated
// lines; CR alone is read as part of the line), refusing to let the event grow past max.
func (r *sseReader) readLine(have int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if have+len(line)+len(chunk) > r.max {
			return nil, fmt.Errorf("%w: over %d bytes", errEventTooLarge, r.max)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// encode writes ev with data in place of its own, keeping its id, event and retry fields.
func (ev sseEvent) encode(data []byte) []byte {
	var b bytes.Buffer
	if ev.name != nil {
		b.WriteString("event: ")
		b.Write(ev.name)
		b.WriteByte('\n')
	}
	if ev.id != nil {
		b.WriteString("id: ")
		b.Write(ev.id)
		b.WriteByte('\n')
	}
	if ev.retry != nil {
		b.WriteString("retry: ")
		b.Write(ev.retry)
		b.WriteByte('\n')
	}
	for _, line := range bytes.Split(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}
