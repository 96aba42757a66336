package witnessclient_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/checkpoint"
	"github.com/agentgate-dev/agentgate/internal/witnessclient"
)

// TestStatuses: the request is the tlog-witness body, and each status maps to its error.
// (The protocol end to end is tested against litewitness in test/toolwarrant.)
func TestStatuses(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		check  func(error) bool
	}{
		{"cosigned", 200, "— w.example/1 AAAA\n", func(err error) bool { return err == nil }},
		{"conflict", 409, "7\n", func(err error) bool {
			var c *checkpoint.SizeConflict
			return errors.As(err, &c) && c.Size == 7
		}},
		{"inconsistent", 422, "bad consistency proof\n", func(err error) bool {
			return errors.Is(err, checkpoint.ErrWitnessRefused) && strings.Contains(err.Error(), "not consistent")
		}},
		{"unknown key", 403, "invalid signature\n", func(err error) bool { return errors.Is(err, checkpoint.ErrWitnessRefused) }},
		{"down", 503, "", func(err error) bool { return errors.Is(err, checkpoint.ErrUnavailable) }},
		{"not signature lines", 200, "hello\n", func(err error) bool { return errors.Is(err, checkpoint.ErrUnavailable) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = r.Method + " " + r.URL.Path + "\n" + string(b)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c, err := witnessclient.New(witnessclient.Config{URL: srv.URL + "/"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.AddCheckpoint(t.Context(), 3, tlog.TreeProof{{1}}, []byte("o\n5\nAA==\n\n— o sig\n"))
			if !tc.check(err) {
				t.Errorf("error %v", err)
			}
			want := "POST /add-checkpoint\nold 3\n" + (tlog.Hash{1}).String() + "\n\no\n5\nAA==\n\n— o sig\n"
			if got != want {
				t.Errorf("request\n%q\nwant\n%q", got, want)
			}
		})
	}
	if _, err := witnessclient.New(witnessclient.Config{URL: "ftp://x"}); err == nil {
		t.Error("an ftp URL was accepted")
	}
}
