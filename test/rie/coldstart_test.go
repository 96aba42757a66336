package rie_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/rietest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// coldStart is one cold start under aws-lambda-rie: init as the emulator reports it (exec of
// the bootstrap to its first request for an event) and the wall time of the first
// invocation (emulator listening to response: init plus the first request).
type coldStart struct{ init, first time.Duration }

// startCold runs bootstrap under a fresh emulator, waits until it listens (the bootstrap is
// started only by the first invocation), times one invocation of ev and stops it.
func startCold(b *testing.B, rie, bootstrap string, env []string, ev events.APIGatewayV2HTTPRequest, status int) coldStart {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	emu := rietest.Start(b, rie, bootstrap, env)
	defer emu.Stop()
	if err := emu.WaitListening(ctx); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	resp, err := invoke(ctx, emu, ev, false)
	first := time.Since(t0)
	if err != nil {
		b.Fatalf("%s: %v\n%s", bootstrap, err, emu.Logs())
	}
	if resp.StatusCode != status {
		b.Fatalf("%s: status %d, want %d: %s", bootstrap, resp.StatusCode, status, resp.Body)
	}
	// The emulator logs its INIT REPORT before it forwards the event; its output reaches
	// us through a pipe, so allow it a moment.
	for wait := 0; ; wait++ {
		if d, ok := emu.InitDuration(); ok {
			return coldStart{init: d, first: first}
		}
		if wait == 500 {
			b.Fatalf("%s: no INIT REPORT in the emulator's log:\n%s", bootstrap, emu.Logs())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func median(xs []time.Duration) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkColdStart measures the pads function's cold start under aws-lambda-rie against a
// minimal bootstrap (test/rie/baseline: lambda.Start and a fixed answer, built the same
// way) started in the same run, so the emulator's and the Go runtime's own time cancel out.
// Each iteration cold-starts three emulators: pads answering an unknown route (the
// contract's 404, which touches no table: init plus routing), pads answering /health (the
// first request that reads the table), and the baseline. The table is initialised (format
// marker, demo pad) before the timed iterations, as it is for every container but the very
// first. Reported, as medians over the iterations:
//
//	pads-init-ms, baseline-init-ms   init as aws-lambda-rie reports it (INIT REPORT durationMs)
//	init-over-baseline-ms            pads init minus baseline init: the function's own init
//	init-ratio                       pads init / baseline init
//	first-404-over-baseline-ms       first response to the unknown route, minus the baseline's
//	first-health-over-baseline-ms    first response to /health (its DynamoDB calls included)
//
// Run: go test -run='^$' -bench=ColdStart -benchtime=15x ./test/rie/
// The DynamoDB endpoint is moto on loopback unless AWS_ENDPOINT_URL names another.
func BenchmarkColdStart(b *testing.B) {
	rie := rietest.Find(b)
	cfg := awstest.Config(b)
	table := awstest.PadsTable(b, cfg)
	pads := rietest.Build(b, "pads")
	base := rietest.BuildPackage(b, "./test/rie/baseline")
	env := append(awstest.Env(b), "PADS_TABLE="+table, "LOCKER_LOG_LEVEL=warn")

	var health events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(testenv.Event(b, "health.json"), &health); err != nil {
		b.Fatal(err)
	}
	unknown := health
	unknown.RawPath, unknown.RouteKey = "/v2/nothing", "$default"
	unknown.RequestContext.HTTP.Path, unknown.RequestContext.RouteKey = "/v2/nothing", "$default"

	startCold(b, rie, pads, env, health, 200) // initialise the table, untimed
	var padsInit, baseInit, pads404, padsHealth, base404 []time.Duration
	b.ResetTimer()
	for range b.N {
		p := startCold(b, rie, pads, env, unknown, 404)
		h := startCold(b, rie, pads, env, health, 200)
		z := startCold(b, rie, base, env, unknown, 404)
		padsInit = append(padsInit, p.init, h.init)
		pads404 = append(pads404, p.first)
		padsHealth = append(padsHealth, h.first)
		baseInit = append(baseInit, z.init)
		base404 = append(base404, z.first)
	}
	b.StopTimer()
	pi, bi := median(padsInit), median(baseInit)
	b.ReportMetric(0, "ns/op") // one iteration is three emulator lifetimes: not a figure of interest
	b.ReportMetric(ms(pi), "pads-init-ms")
	b.ReportMetric(ms(bi), "baseline-init-ms")
	b.ReportMetric(ms(pi-bi), "init-over-baseline-ms")
	b.ReportMetric(float64(pi)/float64(bi), "init-ratio")
	b.ReportMetric(ms(median(pads404)-median(base404)), "first-404-over-baseline-ms")
	b.ReportMetric(ms(median(padsHealth)-median(base404)), "first-health-over-baseline-ms")
	b.Logf("%d cold starts each: pads init %.1f ms, baseline init %.1f ms (pads − baseline %.1f ms, ×%.2f); "+
		"first response: 404 route %.1f ms, /health %.1f ms, baseline %.1f ms",
		len(base404), ms(pi), ms(bi), ms(pi-bi), float64(pi)/float64(bi), ms(median(pads404)), ms(median(padsHealth)), ms(median(base404)))
}
