// Command bench runs the benchmarks quoted in README.md's performance table, prints one
// table (figure, value, baseline, ratio, goal, command) and writes bench.json: a list of
// {"id","value","unit","baseline","ratio","goal"}. Every ratio is against a baseline
// measured in the same run — in alternating rounds inside the benchmark
// (internal/benchratio) or, for appends, in -count rounds that alternate with the floor —
// and each figure is the median of its rounds. The machine is shared: ratios, not times.
//
//	go run ./scripts/bench                        # run everything, write bench.json
//	go run ./scripts/bench -from bench.json -readme README.md   # regenerate the table only
//	go run ./scripts/bench -scale                 # the scale figures only (scale.go), merged into bench.json
//
// Writing bench.json keeps the figures of the file that this run did not measure (the
// scale figures for a plain run, every other for -scale).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Figure is one entry of bench.json.
type Figure struct {
	ID       string  `json:"id"`
	Value    float64 `json:"value"`
	Unit     string  `json:"unit"`
	Baseline float64 `json:"baseline"`
	Ratio    float64 `json:"ratio"`
	Goal     string  `json:"goal"`
}

// spec says what a figure measures and how to rerun it.
type spec struct {
	what, baseline, command string
}

var specs = map[string]spec{}

func init() {
	list := "go test -run '^$' -bench 'ListTools/%s/%s$' ./internal/enforce/"
	for _, n := range []string{"10", "100", "1000"} {
		specs["extmcp-list-"+n] = spec{"ExtMcp tools/list decision, " + n + " tools, warm (a repeat listing: the decision memo)", "SHA-256 of the same result bytes, µs", fmt.Sprintf(list, n, "warm")}
		specs["extmcp-list-"+n+"-nomemo"] = spec{"the same, memo off (every tool's digest found by its raw bytes)", "SHA-256 of the same result bytes, µs", fmt.Sprintf(list, n, "digest-cache")}
	}
	specs["extmcp-call"] = spec{"ExtMcp tools/call decision", "—", "go test -run '^$' -bench 'CallTool$' ./internal/enforce/"}
	load := "go run ./scripts/extmcp-load -rate 2000 -duration 5s -server-procs 1"
	specs["grpc-list-p99-2000"] = spec{"tools/list over loopback gRPC at 2,000 req/s, p99 from each request's scheduled start, generator in its own process, the processor at GOMAXPROCS=1 as the ECS task runs it", "the same load against a no-op server of the same shape (calibration), ms", load}
	specs["grpc-call-p99-2000"] = spec{"tools/call over loopback gRPC at 2,000 req/s, p99, generator in its own process, GOMAXPROCS=1", "the same load against the no-op server (calibration), ms", load}
	specs["grpc-list-cpu-2000"] = spec{"the processor's CPU time (user + system) per tools/list request in that run, GOMAXPROCS=1", "the same at the Go runtime's default GOMAXPROCS (`-server-procs 0`, the machine's cores), µs", load + " && go run ./scripts/extmcp-load -rate 2000 -duration 5s -server-procs 0 -calibrate=false"}
	specs["grpc-call-cpu-2000"] = spec{"the same per tools/call request", "the same at the runtime's default GOMAXPROCS, µs", load + " && go run ./scripts/extmcp-load -rate 2000 -duration 5s -server-procs 0 -calibrate=false"}
	specs["proxy-list-100"] = spec{"tools/list of 100 tools through `toolwarrant proxy` over loopback HTTP, in front of a real MCP server (the go-sdk's, stateless, JSON answers)", "the same request straight to that server, µs", "go test -run '^$' -bench 'ProxyList100/mcp-server$' ./internal/mcpproxy/"}
	specs["proxy-list-100-floor"] = spec{"the same through the proxy in front of an upstream that answers from memory: what the proxy adds to the cheapest upstream (a second loopback hop, the strict envelope, the decision)", "the same request straight to it, µs", "go test -run '^$' -bench 'ProxyList100/floor$' ./internal/mcpproxy/"}
	read := "go test -run '^$' -bench 'ReadVerify256KiB/%s/%s$' ./internal/lockerclient/"
	specs["read-64k"] = spec{"lockermcp's verified read of a sealed 256 KiB pad (4 × 64 KiB) from a real lockerd over loopback, binary form (one request)", "raw SHA-256 over the same payload, MB/s", fmt.Sprintf(read, "4blocks", "http-lockerd")}
	specs["read-64k-open"] = spec{"the same read of an open pad (its pad and ticket read from SQLite every time; its answer cached by head and state)", "raw SHA-256, MB/s", fmt.Sprintf(read, "4blocks", "http-lockerd-open")}
	specs["read-1k-open"] = spec{"the same, open pad, 256 × 1 KiB", "raw SHA-256, MB/s", fmt.Sprintf(read, "256blocks", "http-lockerd-open")}
	specs["read-1k"] = spec{"the same, 256 × 1 KiB blocks", "raw SHA-256, MB/s", fmt.Sprintf(read, "256blocks", "http-lockerd")}
	specs["read-64k-json"] = spec{"the same read in the JSON form (pages), 4 × 64 KiB", "raw SHA-256, MB/s", fmt.Sprintf(read, "4blocks", "http-lockerd-json")}
	specs["read-1k-json"] = spec{"the same read in the JSON form, 256 × 1 KiB", "raw SHA-256, MB/s", fmt.Sprintf(read, "256blocks", "http-lockerd-json")}
	specs["read-ceiling"] = spec{"the ceiling of any HTTP read here: one loopback GET of the same 256 KiB from memory, hashed as it arrives", "raw SHA-256, MB/s", fmt.Sprintf(read, "4blocks", "ceiling-get")}
	appendCmd := "BENCH_DIR=$PWD/bin go test -run '^$' -bench Append -benchtime 1000x -count 3 ./internal/sqlitestore/"
	for _, n := range []string{"1", "8", "64"} {
		specs["append-"+n] = spec{"durable appends (fsync before every 201, group commit) across " + n + " pad(s)", "one durable single-row INSERT commit, appends/s", appendCmd}
	}
	specs["hostile-peak-rss-mb"] = spec{"peak RSS of `agentgate lock` refusing a server that answers tools/list with a 1 GiB body, or with a server-sent event that never ends (the larger; issue 31 measured 7.4 GB and 9.2 GB before the read bounds)", "the same command locking a well-behaved two-tool server, MiB", "go test -run '^$' -bench HostilePeakRSS -benchtime 1x -count 3 ./test/hostile/"}
	specs["sha256-mbps"] = spec{"SHA-256 throughput on this machine (the read baselines' own median)", "—", fmt.Sprintf(read, "4blocks", "http-lockerd")}
}

var order = []string{"extmcp-list-10", "extmcp-list-100", "extmcp-list-1000", "extmcp-list-10-nomemo", "extmcp-list-100-nomemo", "extmcp-list-1000-nomemo",
	"extmcp-call", "proxy-list-100", "proxy-list-100-floor", "grpc-list-p99-2000", "grpc-call-p99-2000", "grpc-list-cpu-2000", "grpc-call-cpu-2000", "read-64k", "read-1k", "read-64k-open", "read-1k-open", "read-64k-json", "read-1k-json", "read-ceiling",
	"append-1", "append-8", "append-64", "hostile-peak-rss-mb", "sha256-mbps"}

func main() {
	out := flag.String("out", "bench.json", "where to write the figures")
	from := flag.String("from", "", "read figures from this bench.json instead of running the benchmarks")
	readme := flag.String("readme", "", "rewrite the table between the bench markers of this file")
	count := flag.Int("count", 3, "rounds of each go benchmark (the median is quoted)")
	scale := flag.Bool("scale", false, "run only the scale benchmark (test/scale, `make bench-scale`) and merge its figures into -out")
	flag.Parse()
	var figs []Figure
	var err error
	switch {
	case *from != "":
		figs, err = load(*from)
	case *scale:
		echoBench = true
		figs, err = runScale()
		if err == nil {
			err = writeMerged(*out, figs)
		}
	default:
		figs, err = runAll(*count)
		if err == nil {
			err = writeMerged(*out, figs)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	printTable(figs)
	if *readme != "" {
		if err := rewriteReadme(*readme, figs); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
	}
}

// results maps a benchmark name (without -GOMAXPROCS) to each round's metrics by unit.
type results map[string][]map[string]float64

// echoBench copies each benchmark's output to stderr (-scale: its logged steps are what
// docs/aws.md quotes).
var echoBench bool

func goBench(env []string, args ...string) (results, error) {
	cmd := exec.Command("go", append([]string{"test", "-run", "^$"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	fmt.Fprintln(os.Stderr, "bench: go", strings.Join(cmd.Args[1:], " "))
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(cmd.Args[1:], " "), err, outb)
	}
	if echoBench {
		_, _ = os.Stderr.Write(outb)
	}
	r := results{}
	sc := bufio.NewScanner(bytes.NewReader(outb))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		m := map[string]float64{}
		for i := 2; i+1 < len(f); i += 2 {
			if v, err := strconv.ParseFloat(f[i], 64); err == nil {
				m[f[i+1]] = v
			}
		}
		r[name] = append(r[name], m)
	}
	return r, nil
}

// median of one metric over a benchmark's rounds.
func (r results) median(name, unit string) (float64, error) {
	var v []float64
	for _, m := range r[name] {
		if x, ok := m[unit]; ok {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return 0, fmt.Errorf("no %s for %s", unit, name)
	}
	slices.Sort(v)
	return v[len(v)/2], nil
}

func runAll(count int) ([]Figure, error) {
	var figs []Figure
	var errs []error
	must := func(v float64, err error) float64 {
		errs = append(errs, err)
		return v
	}
	c := "-count=" + strconv.Itoa(count)

	ex, err := goBench(nil, "-bench", "ListTools/(10|100|1000)/(warm|digest-cache)$|CallTool$", c, "./internal/enforce/")
	if err != nil {
		return nil, err
	}
	for _, n := range []string{"10", "100", "1000"} {
		for _, v := range []struct{ id, sub string }{{"extmcp-list-" + n, "warm"}, {"extmcp-list-" + n + "-nomemo", "digest-cache"}} {
			name := "BenchmarkListTools/" + n + "/" + v.sub
			figs = append(figs, Figure{ID: v.id, Unit: "µs", Value: must(ex.median(name, "subject-ns")) / 1e3,
				Baseline: must(ex.median(name, "base-ns")) / 1e3, Ratio: must(ex.median(name, "x_sha256")), Goal: "ratio <= 1.5"})
		}
	}
	figs = append(figs, Figure{ID: "extmcp-call", Unit: "µs", Value: must(ex.median("BenchmarkCallTool", "ns/op")) / 1e3, Goal: "<= 20 µs"})

	px, err := goBench(nil, "-bench", "ProxyList100/", c, "./internal/mcpproxy/")
	if err != nil {
		return nil, err
	}
	for _, v := range []struct{ id, sub, goal string }{{"proxy-list-100", "mcp-server", "ratio <= 1.3"}, {"proxy-list-100-floor", "floor", "—"}} {
		name := "BenchmarkProxyList100/" + v.sub
		figs = append(figs, Figure{ID: v.id, Unit: "µs", Value: must(px.median(name, "subject-ns")) / 1e3,
			Baseline: must(px.median(name, "base-ns")) / 1e3, Ratio: must(px.median(name, "x_direct")), Goal: v.goal})
	}

	rd, err := goBench(nil, "-bench", "ReadVerify256KiB/(4|256)blocks/(ceiling-get|http-lockerd|http-lockerd-open|http-lockerd-json)$", c, "./internal/lockerclient/")
	if err != nil {
		return nil, err
	}
	var shas []float64
	for _, v := range []struct{ id, blocks, sub, goal string }{
		{"read-64k", "4", "http-lockerd", "ratio >= 0.4"}, {"read-1k", "256", "http-lockerd", "ratio >= 0.15"},
		{"read-64k-open", "4", "http-lockerd-open", "—"}, {"read-1k-open", "256", "http-lockerd-open", "—"},
		{"read-64k-json", "4", "http-lockerd-json", "no slower than before"}, {"read-1k-json", "256", "http-lockerd-json", "no slower than before"},
		{"read-ceiling", "4", "ceiling-get", "—"},
	} {
		name := "BenchmarkReadVerify256KiB/" + v.blocks + "blocks/" + v.sub
		base := must(rd.median(name, "base_MB/s"))
		ratio := must(rd.median(name, "x_sha256"))
		shas = append(shas, base)
		figs = append(figs, Figure{ID: v.id, Unit: "MB/s", Value: base * ratio, Baseline: base, Ratio: ratio, Goal: v.goal})
	}
	slices.Sort(shas)
	hb, err := goBench(nil, "-bench", "HostilePeakRSS", "-benchtime", "1x", c, "./test/hostile/")
	if err != nil {
		return nil, err
	}
	figs = append(figs, Figure{ID: "hostile-peak-rss-mb", Unit: "MiB", Value: must(hb.median("BenchmarkHostilePeakRSS", "peak-mb")),
		Baseline: must(hb.median("BenchmarkHostilePeakRSS", "base-mb")), Ratio: must(hb.median("BenchmarkHostilePeakRSS", "x_base")), Goal: "< 256 MiB"})
	figs = append(figs, Figure{ID: "sha256-mbps", Unit: "MB/s", Value: shas[len(shas)/2], Goal: "—"})

	dir, _ := filepath.Abs("bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ap, err := goBench([]string{"BENCH_DIR=" + dir}, "-bench", "Append", "-benchtime", "1000x", c, "./internal/sqlitestore/")
	if err != nil {
		return nil, err
	}
	floor := must(ap.median("BenchmarkAppend/floor=insert-commit", "appends/s"))
	for _, v := range []struct{ n, goal string }{{"1", "—"}, {"8", "ratio >= 1.0"}, {"64", "ratio >= 2"}} {
		val := must(ap.median("BenchmarkAppend/pads="+v.n, "appends/s"))
		figs = append(figs, Figure{ID: "append-" + v.n, Unit: "appends/s", Value: val, Baseline: floor, Ratio: val / floor, Goal: v.goal})
	}

	lg, err := loadGen()
	if err != nil {
		return nil, err
	}
	figs = append(figs, lg...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	slices.SortStableFunc(figs, func(a, b Figure) int { return slices.Index(order, a.ID) - slices.Index(order, b.ID) })
	return figs, nil
}

// loadGen drives the processor over loopback gRPC with scripts/extmcp-load: at
// GOMAXPROCS=1 (as infra/ecs runs it) with its calibration, then at the runtime's
// default without, for the CPU baseline.
func loadGen() ([]Figure, error) {
	type run map[string]struct{ p99, cpu float64 } // by method/target
	drive := func(args ...string) (run, error) {
		cmd := exec.Command("go", append([]string{"run", "./scripts/extmcp-load", "-rate", "2000", "-duration", "5s", "-json"}, args...)...)
		cmd.Stderr = os.Stderr
		fmt.Fprintln(os.Stderr, "bench: go", strings.Join(cmd.Args[1:], " "))
		outb, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("extmcp-load: %w", err)
		}
		var doc struct {
			Results []struct {
				Method, Target string
				P99Micros      float64 `json:"p99Micros"`
				ServerCPU      float64 `json:"serverCpuMicrosPerRequest"`
			} `json:"results"`
		}
		if err := json.Unmarshal(outb, &doc); err != nil {
			return nil, fmt.Errorf("extmcp-load: %w", err)
		}
		r := run{}
		for _, x := range doc.Results {
			r[x.Method+"/"+x.Target] = struct{ p99, cpu float64 }{x.P99Micros / 1e3, x.ServerCPU}
		}
		return r, nil
	}
	one, err := drive("-server-procs", "1")
	if err != nil {
		return nil, err
	}
	def, err := drive("-server-procs", "0", "-calibrate=false")
	if err != nil {
		return nil, err
	}
	var figs []Figure
	for _, m := range []struct{ p99, cpu, method string }{{"grpc-list-p99-2000", "grpc-list-cpu-2000", "tools/list"}, {"grpc-call-p99-2000", "grpc-call-cpu-2000", "tools/call"}} {
		p, n := one[m.method+"/processor"], one[m.method+"/noop"]
		d := def[m.method+"/processor"]
		if p.p99 == 0 || n.p99 == 0 || p.cpu == 0 || d.cpu == 0 {
			return nil, fmt.Errorf("extmcp-load reported no %s figures", m.method)
		}
		figs = append(figs, Figure{ID: m.p99, Unit: "ms", Value: p.p99, Baseline: n.p99, Ratio: p.p99 / n.p99, Goal: "<= 1 ms"},
			Figure{ID: m.cpu, Unit: "µs", Value: p.cpu, Baseline: d.cpu, Ratio: p.cpu / d.cpu, Goal: "—"})
	}
	return figs, nil
}

// writeMerged writes figs into path, keeping the figures path holds that figs lacks.
func writeMerged(path string, figs []Figure) error {
	old, err := load(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	all := merge(old, figs)
	slices.SortStableFunc(all, func(a, b Figure) int { return rank(a.ID) - rank(b.ID) })
	return write(path, all)
}

// rank orders the figures of bench.json: README's, then the scale figures, then any other.
func rank(id string) int {
	if i := slices.Index(order, id); i >= 0 {
		return i
	}
	if i := slices.Index(scaleOrder, id); i >= 0 {
		return len(order) + i
	}
	return len(order) + len(scaleOrder)
}

func write(path string, figs []Figure) error {
	b, err := json.MarshalIndent(figs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func load(path string) ([]Figure, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var figs []Figure
	return figs, json.Unmarshal(b, &figs)
}

func num(v float64) string {
	switch {
	case v == 0:
		return "—"
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func ratio(v float64) string {
	if v == 0 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 3, 64) + "×"
}

func printTable(figs []Figure) {
	fmt.Printf("%-24s %12s %-9s %12s %9s  %-22s %s\n", "figure", "value", "unit", "baseline", "ratio", "goal", "command")
	for _, f := range figs {
		fmt.Printf("%-24s %12s %-9s %12s %9s  %-22s %s\n", f.ID, num(f.Value), f.Unit, num(f.Baseline), ratio(f.Ratio), f.Goal, specs[f.ID].command)
	}
}

const beginMark, endMark = "<!-- bench:begin (generated by go run ./scripts/bench -from bench.json -readme README.md) -->", "<!-- bench:end -->"

func rewriteReadme(path string, figs []Figure) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(b)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no bench markers", path)
	}
	figs = slices.DeleteFunc(slices.Clone(figs), isScale) // docs/aws.md quotes those
	var t strings.Builder
	t.WriteString(beginMark + "\n\n| figure | what | value | baseline | ratio | goal | command |\n|---|---|---|---|---|---|---|\n")
	for _, f := range figs {
		sp := specs[f.ID]
		fmt.Fprintf(&t, "| `%s` | %s | %s %s | %s (%s) | %s | %s | `%s` |\n", f.ID, sp.what, num(f.Value), f.Unit, num(f.Baseline), sp.baseline, ratio(f.Ratio), f.Goal, sp.command)
	}
	t.WriteString("\n")
	return os.WriteFile(path, []byte(s[:i]+t.String()+s[j:]), 0o644)
}
