// Command extmcp-load measures an ExtMcp processor over loopback gRPC at a fixed request
// rate from its own process: tools/list responses (a 100-tool result, 90 approved) and
// tools/call requests, each for a bounded time, open loop, reporting p50/p90/p99/max
// latency measured from each request's scheduled start (so neither a slow server nor the
// generator's own lateness can hide).
//
// Beside every figure it reports its calibration: the same load, measured the same way,
// against a no-op ExtMcp server of the same shape (the processor's gRPC options, answers
// of the same sizes, no decision). That is what the generator, gRPC and loopback cost on
// this machine; the processor's own share is the difference.
//
// By default it starts the processor itself, as a child process (this binary re-executed
// with -child) with an in-memory source, and stops it by its PID when done; -addr points
// it at a running `toolwarrant serve` instead (loopback addresses only; calibration still
// uses its own no-op child). -server-procs sets the GOMAXPROCS of the servers it starts
// (infra/ecs runs the processor at 1); each result reports the server's CPU per request.
//
//	go run ./scripts/extmcp-load -rate 2000 -duration 5s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/extmcp"
	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
	"github.com/agentgate-dev/agentgate/internal/warrant"
)

func main() {
	rate := flag.Int("rate", 2000, "requests per second per method")
	duration := flag.Duration("duration", 5*time.Second, "how long each method is driven (at most 60s)")
	inflight := flag.Int("max-inflight", 256, "most requests outstanding at once")
	addr := flag.String("addr", "", "a running processor on loopback (default: start one as a child process)")
	server := flag.String("server", "bench", "the target name sent as service_names")
	calibrate := flag.Bool("calibrate", true, "also measure a no-op server of the same shape")
	procs := flag.Int("server-procs", 0, "GOMAXPROCS of the servers this command starts, the no-op one too (0: this process's environment decides, the Go runtime's default unless GOMAXPROCS is set)")
	asJSON := flag.Bool("json", false, "print one JSON document")
	child := flag.String("child", "", "internal: serve as the child process (processor or noop)")
	flag.Parse()
	if *child != "" {
		if err := serveChild(*child, *server); err != nil {
			fmt.Fprintln(os.Stderr, "extmcp-load child:", err)
			os.Exit(1)
		}
		return
	}
	if *rate < 1 || *rate > 20000 || *duration <= 0 || *duration > time.Minute || *inflight < 1 || *procs < 0 || *procs > 256 {
		fmt.Fprintln(os.Stderr, "extmcp-load: -rate 1..20000, -duration up to 60s, -max-inflight at least 1, -server-procs 0..256")
		os.Exit(2)
	}
	if *procs > 0 && *addr != "" {
		fmt.Fprintln(os.Stderr, "extmcp-load: -server-procs sets the servers this command starts; with -addr, set GOMAXPROCS where that server runs")
		os.Exit(2)
	}
	if err := run(*rate, *duration, *inflight, *procs, *addr, *server, *calibrate, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "extmcp-load:", err)
		os.Exit(1)
	}
}

// memSource serves a fixed snapshot.
type memSource struct{ snap enforce.Snapshot }

func (m memSource) Snapshot(_ context.Context, server string) (enforce.Snapshot, error) {
	if server != m.snap.Server {
		return enforce.Snapshot{}, enforce.ErrUnknownServer
	}
	return m.snap, nil
}

// listing returns a 100-tool tools/list result (~600 bytes a tool) and its evidence, with
// every tenth tool unapproved.
func listing(server string) ([]byte, enforce.Snapshot, error) {
	snap := enforce.Snapshot{Server: server, Tools: map[string]enforce.ToolEvidence{}}
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
		ev := enforce.ToolEvidence{Crawled: string(d)}
		if i%10 != 9 {
			ev.Approved = string(d)
		}
		snap.Tools[fmt.Sprintf("tool_%03d", i)] = ev
		tools = append(tools, raw)
	}
	return []byte(`{"tools":[` + strings.Join(tools, ",") + `],"ttlMs":0,"cacheScope":"private"}`), snap, nil
}

var callParams = []byte(`{"name":"tool_007","arguments":{"query":"weather in Oslo","limit":3}}`)

// serveChild serves on 127.0.0.1:0, prints the address on stdout, and runs until SIGTERM
// or SIGINT (or its parent closes stdin).
func serveChild(kind, server string) error {
	result, snap, err := listing(server)
	if err != nil {
		return err
	}
	p, err := enforce.New(enforce.Config{Servers: []string{server}, Source: memSource{snap}})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() { // the parent went away: stop too
		_, _ = bufio.NewReader(os.Stdin).ReadByte()
		stop()
	}()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(lis.Addr().String(), runtime.GOMAXPROCS(0))
	switch kind {
	case "processor":
		return extmcp.Serve(ctx, lis, p, extmcp.ServeOptions{})
	case "noop":
		// The answers the processor would give, computed once: same sizes on the wire.
		p.Start(ctx)
		d := p.Decide(ctx, enforce.Message{Phase: enforce.PhaseResponse, Method: "tools/list", Services: []string{server}, Body: result})
		p.Close(ctx)
		if d.Outcome != enforce.OutcomeMutated {
			return fmt.Errorf("noop: the listing was not filtered: %s", d.Reason)
		}
		s := grpc.NewServer(extmcp.ServerOptions(enforce.DefaultMaxMessageBytes, enforce.DefaultMaxReplyBytes)...)
		pb.RegisterExtMcpServer(s, noop{mutated: d.Mutated})
		go func() { <-ctx.Done(); s.Stop() }()
		if err := s.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			return err
		}
		return nil
	}
	return fmt.Errorf("unknown child kind %q", kind)
}

// noop answers like the processor without deciding anything.
type noop struct {
	pb.UnimplementedExtMcpServer
	mutated []byte
}

func (n noop) CheckRequest(context.Context, *pb.McpRequest) (*pb.McpRequestResult, error) {
	return &pb.McpRequestResult{Result: &pb.McpRequestResult_Pass{Pass: &pb.Pass{}}}, nil
}

func (n noop) CheckResponse(context.Context, *pb.McpResponse) (*pb.McpResponseResult, error) {
	return &pb.McpResponseResult{Result: &pb.McpResponseResult_Mutated{Mutated: n.mutated}}, nil
}

// childProc is a server this command started; stop ends it by its PID.
type childProc struct {
	cmd   *exec.Cmd
	addr  string
	procs int // its GOMAXPROCS
}

func startChild(kind, server string, procs int) (*childProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-child", kind, "-server", server)
	if procs > 0 {
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", procs))
	}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	_ = in // held open for the child's lifetime; closing it tells the child to stop
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &childProc{cmd: cmd}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		c.stop()
		return nil, fmt.Errorf("child %s printed no address: %w", kind, err)
	}
	if _, err := fmt.Sscan(line, &c.addr, &c.procs); err != nil {
		c.stop()
		return nil, fmt.Errorf("child %s printed %q, not its address and GOMAXPROCS", kind, line)
	}
	return c, nil
}

// stop sends SIGTERM to the child's PID, waits up to 5 s, then kills that PID.
func (c *childProc) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
}

// result is one method driven against one server.
type result struct {
	Method    string  `json:"method"`
	Target    string  `json:"target"` // "processor" or "noop" (the calibration)
	Rate      int     `json:"rate"`
	Sent      int     `json:"sent"`
	Errors    int     `json:"errors"`
	Achieved  float64 `json:"achievedPerSecond"`
	P50Micros float64 `json:"p50Micros"`
	P90Micros float64 `json:"p90Micros"`
	P99Micros float64 `json:"p99Micros"`
	MaxMicros float64 `json:"maxMicros"`
	// GenCPUMicros and ServerCPUMicros are the CPU time (user + system) per request of
	// this process and of the server's (when it is a child of this command): on a 2-core
	// machine, 2,000 requests a second leave 1,000 µs of CPU per request for both together
	// and everything else the machine runs.
	GenCPUMicros    float64 `json:"generatorCpuMicrosPerRequest"`
	ServerCPUMicros float64 `json:"serverCpuMicrosPerRequest,omitempty"`
	// LateP50Micros and LateP99Micros are the generator's own lateness: how long after
	// its scheduled start a request was handed to gRPC. It is part of every latency above.
	LateP50Micros float64 `json:"lateP50Micros"`
	LateP99Micros float64 `json:"lateP99Micros"`
	// ServerProcs is the server's GOMAXPROCS when it is a child of this command.
	ServerProcs int `json:"serverGomaxprocs,omitempty"`
}

func run(rate int, duration time.Duration, inflight, procs int, addr, server string, calibrate, asJSON bool) error {
	result100, _, err := listing(server)
	if err != nil {
		return err
	}
	if addr == "" {
		// started below
	} else if host, _, err := net.SplitHostPort(addr); err != nil || !net.ParseIP(host).IsLoopback() {
		return errors.New("-addr must be a loopback address such as 127.0.0.1:9001")
	}
	type target struct {
		name, addr string
		pid, procs int
	}
	targets := []target{{"processor", addr, 0, 0}}
	if addr == "" {
		c, err := startChild("processor", server, procs)
		if err != nil {
			return err
		}
		defer c.stop()
		targets[0].addr, targets[0].pid, targets[0].procs = c.addr, c.cmd.Process.Pid, c.procs
		addr = c.addr
	}
	if calibrate {
		c, err := startChild("noop", server, procs)
		if err != nil {
			return err
		}
		defer c.stop()
		targets = append(targets, target{"noop", c.addr, c.cmd.Process.Pid, c.procs})
	}
	ctx := context.Background()
	var out []result
	for _, method := range []string{"tools/list", "tools/call"} {
		for _, t := range targets {
			r, err := measure(ctx, t.addr, t.pid, method, server, result100, rate, duration, inflight)
			if err != nil {
				return fmt.Errorf("%s against %s: %w", method, t.name, err)
			}
			r.Target, r.ServerProcs = t.name, t.procs
			out = append(out, r)
		}
	}
	if asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"addr": addr, "gomaxprocs": runtime.GOMAXPROCS(0), "results": out})
	}
	fmt.Printf("loopback gRPC to %s from a separate process, open loop, latency from each request's scheduled start;\n", addr)
	fmt.Printf("noop = calibration: a no-op server of the same shape, measured the same way; CPU is per request, procs the server's GOMAXPROCS\n")
	fmt.Printf("%-11s %-9s %7s %7s %6s %10s %9s %9s %9s %9s %11s %11s %12s %12s %5s\n", "method", "target", "rate/s", "sent", "errors", "achieved/s", "p50 µs", "p90 µs", "p99 µs", "max µs", "late p50 µs", "late p99 µs", "gen CPU µs", "srv CPU µs", "procs")
	for _, r := range out {
		procs := "-"
		if r.ServerProcs > 0 {
			procs = strconv.Itoa(r.ServerProcs)
		}
		fmt.Printf("%-11s %-9s %7d %7d %6d %10.0f %9.1f %9.1f %9.1f %9.1f %11.1f %11.1f %12.1f %12.1f %5s\n", r.Method, r.Target, r.Rate, r.Sent, r.Errors, r.Achieved, r.P50Micros, r.P90Micros, r.P99Micros, r.MaxMicros, r.LateP50Micros, r.LateP99Micros, r.GenCPUMicros, r.ServerCPUMicros, procs)
	}
	return nil
}

// measure connects to addr and drives one method.
func measure(ctx context.Context, addr string, pid int, method, server string, result100 []byte, rate int, duration time.Duration, inflight int) (result, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	// The requests are marshalled once and the answers are not decoded beyond their first
	// field: the generator's own cost per request stays small (it is in every figure).
	listReq, err := proto.Marshal(&pb.McpResponse{ServiceNames: []string{server}, Method: "tools/list", McpResponse: result100})
	if err != nil {
		return result{}, err
	}
	callReq, err := proto.Marshal(&pb.McpRequest{ServiceNames: []string{server}, Method: "tools/call", McpRequest: callParams})
	if err != nil {
		return result{}, err
	}
	invoke := func(ctx context.Context, rpc string, req []byte, want byte) error {
		var res rawFrame
		err := conn.Invoke(ctx, "/"+extmcp.ServiceName+"/"+rpc, rawFrame(req), &res, grpc.ForceCodecV2(rawCodec{}))
		if err == nil && (len(res) == 0 || res[0] != want) {
			err = fmt.Errorf("%s: unexpected answer (first byte %x)", rpc, res)
		}
		return err
	}
	// The oneof's tags: McpResponseResult.mutated is field 2 (bytes), McpRequestResult.pass
	// field 1 (a message).
	list := func(ctx context.Context) error { return invoke(ctx, "CheckResponse", listReq, 2<<3|2) }
	call := func(ctx context.Context) error { return invoke(ctx, "CheckRequest", callReq, 1<<3|2) }
	if err := list(ctx); err != nil { // also the listing that tools/call relies on
		return result{}, err
	}
	fn := list
	if method == "tools/call" {
		fn = call
	}
	for range 500 { // warm up the connection, both processes' pools and caches
		if err := fn(ctx); err != nil {
			return result{}, err
		}
	}
	gen0, srv0 := cpuTime(os.Getpid()), cpuTime(pid)
	r := drive(ctx, method, fn, rate, duration, inflight)
	gen1, srv1 := cpuTime(os.Getpid()), cpuTime(pid)
	r.GenCPUMicros = float64((gen1 - gen0).Microseconds()) / float64(r.Sent)
	if pid > 0 {
		r.ServerCPUMicros = float64((srv1 - srv0).Microseconds()) / float64(r.Sent)
	}
	return r, nil
}

// cpuTime is a process's user + system CPU time from /proc (0 where unreadable).
func cpuTime(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces:
	// utime and stime are the 14th and 15th fields of the line.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	var ut, st int64
	_, _ = fmt.Sscan(f[11], &ut)
	_, _ = fmt.Sscan(f[12], &st)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// rawFrame is a protobuf message already encoded (sent) or its first byte (received).
type rawFrame []byte

// rawCodec sends rawFrames as they are and keeps only the first byte of an answer,
// without copying the answer into one buffer first: the generator's cost per request
// stays small, like a gateway's that forwards the answer it gets.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(rawFrame))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f := v.(*rawFrame)
	*f = (*f)[:0]
	for _, b := range data {
		if d := b.ReadOnlyData(); len(d) > 0 {
			*f = append(*f, d[0])
			break
		}
	}
	return nil
}

func (rawCodec) Name() string { return "proto" }

// drive sends rate requests a second for duration from a fixed schedule (open loop): a
// request that cannot go at its time — the generator was late, or inflight requests are
// outstanding — goes as soon as it can, and its latency still counts from its schedule.
func drive(ctx context.Context, name string, fn func(context.Context) error, rate int, duration time.Duration, inflight int) result {
	n := int(float64(rate) * duration.Seconds())
	lat := make([]time.Duration, n)
	late := make([]time.Duration, n)
	errs := make([]bool, n)
	// Workers are started up front: a request is handed over a channel, not to a new
	// goroutine, so the generator's per-request work is small and constant.
	type job struct {
		i  int
		at time.Time
	}
	jobs := make(chan job, inflight)
	var wg sync.WaitGroup
	for range inflight {
		wg.Go(func() {
			for j := range jobs {
				rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				sent := time.Now()
				errs[j.i] = fn(rctx) != nil
				done := time.Now()
				cancel()
				lat[j.i], late[j.i] = done.Sub(j.at), sent.Sub(j.at)
			}
		})
	}
	interval := time.Second / time.Duration(rate)
	runtime.LockOSThread() // the pacer keeps one thread, asleep in the kernel between requests
	defer runtime.UnlockOSThread()
	start := time.Now().Add(5 * time.Millisecond)
	for i := range n {
		at := start.Add(time.Duration(i) * interval)
		until(at)
		jobs <- job{i, at}
	}
	close(jobs)
	wg.Wait()
	elapsed := time.Since(start)
	r := result{Method: name, Rate: rate, Sent: n, Achieved: float64(n) / elapsed.Seconds()}
	for _, e := range errs {
		if e {
			r.Errors++
		}
	}
	slices.Sort(lat)
	slices.Sort(late)
	q := func(l []time.Duration, p float64) float64 {
		return float64(l[min(n-1, int(p*float64(n)))].Nanoseconds()) / 1e3
	}
	r.P50Micros, r.P90Micros, r.P99Micros, r.MaxMicros = q(lat, 0.50), q(lat, 0.90), q(lat, 0.99), float64(lat[n-1].Nanoseconds())/1e3
	r.LateP50Micros, r.LateP99Micros = q(late, 0.50), q(late, 0.99)
	return r
}
