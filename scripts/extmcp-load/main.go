// Command extmcp-load measures the ExtMcp processor over loopback gRPC at a fixed request
// rate: tools/list responses (a 100-tool result, 90 approved) and tools/call requests,
// each for a bounded time, reporting p50/p90/p99/max latency measured from each request's
// scheduled start (open loop, so a slow server cannot hide its queueing).
//
// By default it starts an in-process processor on 127.0.0.1 with an in-memory source;
// --addr points it at a running `toolwarrant serve` instead (loopback addresses only).
//
//	go run ./scripts/extmcp-load -rate 1000 -duration 5s
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/agentgate-dev/agentgate/internal/extmcp"
	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func main() {
	rate := flag.Int("rate", 1000, "requests per second per method")
	duration := flag.Duration("duration", 5*time.Second, "how long each method is driven (at most 60s)")
	inflight := flag.Int("max-inflight", 256, "most requests outstanding at once")
	addr := flag.String("addr", "", "a running processor on loopback (default: start one in-process)")
	server := flag.String("server", "bench", "the target name sent as service_names")
	asJSON := flag.Bool("json", false, "print one JSON document")
	flag.Parse()
	if *rate < 1 || *rate > 20000 || *duration <= 0 || *duration > time.Minute || *inflight < 1 {
		fmt.Fprintln(os.Stderr, "extmcp-load: -rate 1..20000, -duration up to 60s, -max-inflight at least 1")
		os.Exit(2)
	}
	if err := run(*rate, *duration, *inflight, *addr, *server, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "extmcp-load:", err)
		os.Exit(1)
	}
}

// memSource serves a fixed snapshot.
type memSource struct{ snap extmcp.Snapshot }

func (m memSource) Snapshot(_ context.Context, server string) (extmcp.Snapshot, error) {
	if server != m.snap.Server {
		return extmcp.Snapshot{}, extmcp.ErrUnknownServer
	}
	return m.snap, nil
}

// listing returns a 100-tool tools/list result (~600 bytes a tool) and its evidence, with
// every tenth tool unapproved.
func listing(server string) ([]byte, extmcp.Snapshot, error) {
	snap := extmcp.Snapshot{Server: server, Tools: map[string]extmcp.ToolEvidence{}}
	var tools []string
	for i := range 100 {
		raw := fmt.Sprintf(`{"name":"tool_%03d","title":"Tool %d","description":"Does thing number %d with care; returns a structured result and never writes outside its sandbox.",`+
			`"inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"What to look up","maxLength":512},"limit":{"type":"integer","minimum":1,"maximum":100,"default":10},`+
			`"mode":{"type":"string","enum":["fast","thorough","exhaustive"]}},"required":["query"],"additionalProperties":false},`+
			`"annotations":{"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false},"_meta":{"vendor/x":{"build":%d}}}`, i, i, i, 1000+i)
		d, _, err := warrant.DigestTool([]byte(raw))
		if err != nil {
			return nil, snap, err
		}
		ev := extmcp.ToolEvidence{Crawled: string(d)}
		if i%10 != 9 {
			ev.Approved = string(d)
		}
		snap.Tools[fmt.Sprintf("tool_%03d", i)] = ev
		tools = append(tools, raw)
	}
	return []byte(`{"tools":[` + strings.Join(tools, ",") + `],"ttlMs":0,"cacheScope":"private"}`), snap, nil
}

type result struct {
	Method    string  `json:"method"`
	Rate      int     `json:"rate"`
	Sent      int     `json:"sent"`
	Errors    int     `json:"errors"`
	Achieved  float64 `json:"achievedPerSecond"`
	P50Micros float64 `json:"p50Micros"`
	P90Micros float64 `json:"p90Micros"`
	P99Micros float64 `json:"p99Micros"`
	MaxMicros float64 `json:"maxMicros"`
	// Service latencies are measured from the moment the request was actually sent,
	// leaving out the load generator's own scheduling delay.
	ServiceP50Micros float64 `json:"serviceP50Micros"`
	ServiceP99Micros float64 `json:"serviceP99Micros"`
}

func run(rate int, duration time.Duration, inflight int, addr, server string, asJSON bool) error {
	result100, snap, err := listing(server)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if addr == "" {
		p, err := extmcp.New(extmcp.Config{Servers: []string{server}, Source: memSource{snap}})
		if err != nil {
			return err
		}
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		addr = lis.Addr().String()
		done := make(chan error, 1)
		go func() { done <- extmcp.Serve(ctx, lis, p, extmcp.ServeOptions{}) }()
		defer func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintln(os.Stderr, "extmcp-load: processor:", err)
			}
		}()
	} else if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		return errors.New("-addr must be a loopback address such as 127.0.0.1:9001")
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	c := pb.NewExtMcpClient(conn)

	list := func(ctx context.Context) error {
		res, err := c.CheckResponse(ctx, &pb.McpResponse{ServiceNames: []string{server}, Method: "tools/list", McpResponse: result100})
		if err == nil && res.GetMutated() == nil {
			err = fmt.Errorf("tools/list not filtered: %v", res)
		}
		return err
	}
	call := func(ctx context.Context) error {
		res, err := c.CheckRequest(ctx, &pb.McpRequest{ServiceNames: []string{server}, Method: "tools/call",
			McpRequest: []byte(`{"name":"tool_007","arguments":{"query":"weather in Oslo","limit":3}}`)})
		if err == nil && res.GetPass() == nil {
			err = fmt.Errorf("tools/call not passed: %v", res.GetError().GetReason())
		}
		return err
	}
	if err := list(ctx); err != nil { // also the listing that tools/call relies on
		return err
	}
	var out []result
	for _, m := range []struct {
		name string
		fn   func(context.Context) error
	}{{"tools/list", list}, {"tools/call", call}} {
		for range 200 { // warm up connections and caches
			_ = m.fn(ctx)
		}
		out = append(out, drive(ctx, m.name, m.fn, rate, duration, inflight))
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"addr": addr, "results": out})
	}
	fmt.Printf("loopback gRPC to %s, open loop, latency from each request's scheduled start\n", addr)
	fmt.Printf("%-11s %7s %7s %6s %10s %9s %9s %9s %9s %12s %12s\n", "method", "rate/s", "sent", "errors", "achieved/s", "p50 µs", "p90 µs", "p99 µs", "max µs", "svc p50 µs", "svc p99 µs")
	for _, r := range out {
		fmt.Printf("%-11s %7d %7d %6d %10.0f %9.1f %9.1f %9.1f %9.1f %12.1f %12.1f\n", r.Method, r.Rate, r.Sent, r.Errors, r.Achieved, r.P50Micros, r.P90Micros, r.P99Micros, r.MaxMicros, r.ServiceP50Micros, r.ServiceP99Micros)
	}
	return nil
}

// drive sends rate requests a second for duration, each at its scheduled time (or as soon
// as fewer than inflight are outstanding), and records each latency from its schedule.
func drive(ctx context.Context, name string, fn func(context.Context) error, rate int, duration time.Duration, inflight int) result {
	n := int(float64(rate) * duration.Seconds())
	lat := make([]time.Duration, n)
	svc := make([]time.Duration, n)
	errs := make([]bool, n)
	sem := make(chan struct{}, inflight)
	var wg sync.WaitGroup
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			sent := time.Now()
			errs[i] = fn(rctx) != nil
			lat[i], svc[i] = time.Since(at), time.Since(sent)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := result{Method: name, Rate: rate, Sent: n, Achieved: float64(n) / elapsed.Seconds()}
	for _, e := range errs {
		if e {
			r.Errors++
		}
	}
	slices.Sort(lat)
	slices.Sort(svc)
	q := func(l []time.Duration, p float64) float64 {
		return float64(l[min(n-1, int(p*float64(n)))].Nanoseconds()) / 1e3
	}
	r.P50Micros, r.P90Micros, r.P99Micros, r.MaxMicros = q(lat, 0.50), q(lat, 0.90), q(lat, 0.99), float64(lat[n-1].Nanoseconds())/1e3
	r.ServiceP50Micros, r.ServiceP99Micros = q(svc, 0.50), q(svc, 0.99)
	return r
}
