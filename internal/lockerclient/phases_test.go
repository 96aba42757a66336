package lockerclient

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"slices"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/locker"
	"github.com/agentgate-dev/agentgate/internal/lockerclient/lockertest"
)

// stamp records when a handler first writes its body.
type stamp struct {
	http.ResponseWriter
	at *time.Time
}

func (s stamp) Write(p []byte) (int, error) {
	if s.at.IsZero() {
		*s.at = time.Now()
	}
	return s.ResponseWriter.Write(p)
}

// BenchmarkReadPhases splits a read of a sealed 256 KiB pad (4 × 64 KiB) into phases,
// each reported as its median in µs: req (the client builds and writes the request),
// wake (until the daemon's handler runs), prewrite (the handler until its first body
// write), firstbyte (from the handler's start until the client has the answer's first
// byte) and body (from there until the read is verified). "ceiling" is the bare GET of
// the same bytes, hashed as they arrive; "lockerd" is lockermcp's read from the real
// handler on SQLite, as read-64k measures it. Both share the process, as in read-64k.
//
//	go test -run='^$' -bench=ReadPhases -benchtime=2000x ./internal/lockerclient/
func BenchmarkReadPhases(b *testing.B) {
	d := lockertest.New(b, lockertest.Options{})
	c, payloads := fullPad(b, d, 4)
	head := locker.ChainHead(payloads)
	body := bytes.Join(payloads, nil)
	for _, mode := range []string{"ceiling", "lockerd"} {
		b.Run(mode, func(b *testing.B) {
			var start, wrote time.Time
			url := lockertest.Serve(b, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				start, wrote = time.Now(), time.Time{}
				if mode == "ceiling" {
					w.Header().Set("Content-Length", fmt.Sprint(len(body)))
					wrote = time.Now()
					_, _ = w.Write(body)
					return
				}
				d.Handler.ServeHTTP(stamp{w, &wrote}, r)
			}))
			client, err := New(Config{BaseURL: url})
			if err != nil {
				b.Fatal(err)
			}
			hc := &http.Client{Transport: &http.Transport{DialContext: dial}}
			buf := make([]byte, 32<<10)
			phases := map[string][]time.Duration{}
			for b.Loop() {
				var sent, first time.Time
				ctx := httptrace.WithClientTrace(b.Context(), &httptrace.ClientTrace{
					WroteRequest:         func(httptrace.WroteRequestInfo) { sent = time.Now() },
					GotFirstResponseByte: func() { first = time.Now() },
				})
				t0 := time.Now()
				if mode == "ceiling" {
					getSHA256(ctx, b, hc, url, buf)
				} else {
					ch, err := client.Read(ctx, c.PadID, c.ReadTicket, ReadOptions{ExpectedHead: &head})
					if err != nil || ch.Integrity.Verdict != VerdictTrustedHeadMatch {
						b.Fatalf("read: %v", err)
					}
					ch.Release()
				}
				done := time.Now()
				for k, v := range map[string]time.Duration{"req": sent.Sub(t0), "wake": start.Sub(sent), "prewrite": wrote.Sub(start),
					"firstbyte": first.Sub(start), "body": done.Sub(first), "total": done.Sub(t0)} {
					phases[k] = append(phases[k], v)
				}
			}
			for k, v := range phases {
				slices.Sort(v)
				b.ReportMetric(float64(v[len(v)/2].Nanoseconds())/1e3, k+"-µs")
			}
		})
	}
}
