package readbound

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func read(t *testing.T, b *Budget, f Framing, data string, chunk int) error {
	t.Helper()
	var r io.Reader = strings.NewReader(data)
	if chunk > 0 {
		r = &chunked{data: []byte(data), n: chunk}
	}
	_, err := io.Copy(io.Discard, b.Body(io.NopCloser(r), f))
	return err
}

type chunked struct {
	data []byte
	n    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(c.n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func TestWholeBody(t *testing.T) {
	b := NewBudget(Limits{Message: 10, Server: 100})
	if err := read(t, b, Whole, strings.Repeat("x", 10), 3); err != nil {
		t.Fatalf("10 bytes under a 10-byte bound: %v", err)
	}
	err := read(t, b, Whole, strings.Repeat("x", 11), 3)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindMessage || e.Limit != 10 || !errors.Is(err, ErrExceeded) {
		t.Fatalf("11 bytes: %v", err)
	}
	if got := b.Exceeded(); got == nil || got.Kind != KindMessage {
		t.Fatalf("budget remembers %v", got)
	}
	if !strings.Contains(err.Error(), "--max-message-bytes") || !strings.Contains(err.Error(), "10 bytes") {
		t.Errorf("message: %s", err)
	}
}

func TestEvents(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		t.Run(strings.NewReplacer("\r", `\r`, "\n", `\n`).Replace(eol), func(t *testing.T) {
			ev := "data: " + strings.Repeat("a", 20) + eol + eol // 26 or 28 bytes
			for _, chunk := range []int{1, 2, 7, 0} {
				b := NewBudget(Limits{Message: int64(len(ev)), Server: 1 << 20})
				if err := read(t, b, Events, strings.Repeat(ev, 50), chunk); err != nil {
					t.Fatalf("chunk %d: 50 events each at the bound: %v", chunk, err)
				}
				b = NewBudget(Limits{Message: int64(len(ev)) - 1, Server: 1 << 20})
				if err := read(t, b, Events, ev+ev, chunk); !errors.Is(err, ErrExceeded) {
					t.Fatalf("chunk %d: an event one byte over: %v", chunk, err)
				}
			}
		})
	}
	// A line end split from its partner across reads is one line end, not a blank line.
	b := NewBudget(Limits{Message: 30, Server: 1 << 20})
	data := "data: x\r\ndata: " + strings.Repeat("y", 40) + "\r\n\r\n"
	if err := read(t, b, Events, data, 8); !errors.Is(err, ErrExceeded) {
		t.Fatalf("a \\r\\n line end taken for a blank line: %v", err)
	}
	// An event that never ends.
	b = NewBudget(Limits{Message: 1 << 10, Server: 1 << 30})
	endless := io.LimitReader(bytes.NewReader(bytes.Repeat([]byte("a"), 1<<20)), 1<<20)
	n, err := io.Copy(io.Discard, b.Body(io.NopCloser(io.MultiReader(strings.NewReader("data: "), endless)), Events))
	if !errors.Is(err, ErrExceeded) || n > 1<<10+32<<10 {
		t.Fatalf("endless event: read %d, %v", n, err)
	}
}

func TestServerBudgetSharedAndSticky(t *testing.T) {
	b := NewBudget(Limits{Message: 100, Server: 250})
	for i := range 2 {
		if err := read(t, b, Whole, strings.Repeat("x", 100), 0); err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
	}
	r := b.Body(io.NopCloser(strings.NewReader(strings.Repeat("x", 100))), Whole)
	_, err := io.Copy(io.Discard, r)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindServer {
		t.Fatalf("third body: %v", err)
	}
	if _, err2 := r.Read(make([]byte, 1)); !errors.Is(err2, err) {
		t.Fatalf("a read after the bound: %v", err2)
	}
	if err := iotest.TestReader(b.Body(io.NopCloser(strings.NewReader("y")), Whole), []byte("y")); err == nil {
		t.Fatal("a new body after the server bound was read")
	}
	if got := b.Exceeded(); got.Kind != KindServer {
		t.Fatalf("first crossed: %v", got)
	}
}

func TestListing(t *testing.T) {
	b := NewBudget(Limits{Listing: 10})
	l := b.Listing("tools/list")
	if err := l.Add(6); err != nil {
		t.Fatal(err)
	}
	err := l.Add(5)
	if !errors.Is(err, ErrExceeded) || !strings.Contains(err.Error(), "the pages of tools/list") || !strings.Contains(err.Error(), "--max-listing-bytes") {
		t.Fatalf("listing: %v", err)
	}
	if err := b.Listing("prompts/list").Add(10); err != nil {
		t.Fatalf("another method has its own count: %v", err)
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]int64{"16MiB": 16 << 20, "16 MiB": 16 << 20, "64m": 64 << 20, "1g": 1 << 30, "512": 512, "3KB": 3 << 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1", "1.5MiB", "1TiB", "99999999999999999999"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
	for n, want := range map[int64]string{16 << 20: "16 MiB", 1536 << 10: "1536 KiB", 100: "100 bytes", 1: "1 byte", 1 << 30: "1 GiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
	var s Size
	if err := s.Set("0"); err == nil {
		t.Error("a zero size accepted")
	}
	if err := s.Set("2MiB"); err != nil || s.String() != "2MiB" || s.Type() != "SIZE" {
		t.Errorf("Size: %v %q", err, s.String())
	}
}
