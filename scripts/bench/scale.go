package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The scale figures (-scale, `make bench-scale`): test/scale's BenchmarkScale, the crawl
// function, a replica's refresh and the audit log's appends at a fraction of 5,000 servers
// × 40 tools against moto on loopback. docs/aws.md ("Scale: measured and modelled") quotes
// them and models the target from them; they are not in README.md's table.
const scaleCmd = "go test -run '^$' -bench Scale -benchtime 1x -timeout 30m ./test/scale/"

var scaleOrder = []string{"scale-crawl-servers-per-min", "scale-crawl-wall-s", "scale-crawl-first-wall-s", "scale-crawl-first-reads-per-server",
	"scale-refresh-reads-per-replica", "scale-log-appends-per-s", "scale-log-appends-few-writers-per-s", "scale-log-appends-1writer-per-s",
	"scale-fanout-servers-per-min", "scale-fanout-wall-s", "scale-fanout-longest-invocation-s", "scale-fanout-reads-per-server"}

func init() {
	specs["scale-crawl-servers-per-min"] = spec{"servers the crawl function records per minute, an unchanged crawl of the whole fleet (steady state), in-process handler against moto", "the listing step of the same crawl alone (crawler and fleet), servers/min", scaleCmd}
	specs["scale-crawl-wall-s"] = spec{"wall time of that unchanged crawl of the whole fleet", "the same crawl of the smaller catalog (SCALE_SMALL servers), s", scaleCmd}
	specs["scale-crawl-first-wall-s"] = spec{"wall time of the first crawl of the whole fleet (every tool a new version)", "the same of the smaller catalog, s", scaleCmd}
	specs["scale-crawl-first-reads-per-server"] = spec{"DynamoDB reads per server of that first crawl (it reads every server's index per server with new versions)", "the same of the smaller catalog, reads/server", scaleCmd}
	specs["scale-refresh-reads-per-replica"] = spec{"DynamoDB reads of one approvals refresh of an ExtMcp replica serving every server of the catalog", "the same on the smaller catalog, reads", scaleCmd}
	specs["scale-log-appends-per-s"] = spec{"audit log appends per second through the sequencer (queued, integrated in batches; acknowledged once sequenced), SCALE_WRITERS_MANY (32) concurrent writers as the interceptor role (RecordDecisions): the many-writer load the sequencer is for", "the same writers through the single HEAD item, appends/s", scaleCmd}
	specs["scale-log-appends-few-writers-per-s"] = spec{"the same with SCALE_WRITERS (8) concurrent writers: latency-bound, not contention-bound, either way (docs/aws.md, \"Sequenced appends\")", "the same writers through the single HEAD item, appends/s", scaleCmd}
	specs["scale-log-appends-1writer-per-s"] = spec{"appends per second through the single HEAD item with one writer (no contention)", "—", scaleCmd}
	specs["scale-fanout-servers-per-min"] = spec{"servers recorded per minute by one scheduled crawl through the fan-out (dispatcher, crawl queue, 2 workers of 5 messages), a first crawl of SCALE_FANOUT_SERVERS × SCALE_FANOUT_TOOLS against moto", "the single crawl function's first crawl of the SCALE_SERVERS × SCALE_TOOLS fleet, servers/min", scaleCmd}
	specs["scale-fanout-wall-s"] = spec{"wall time of that fan-out crawl, dispatch to an empty queue", "—", scaleCmd}
	specs["scale-fanout-longest-invocation-s"] = spec{"the longest crawl function invocation of that fan-out crawl", "the function's timeout in template.yaml, s", scaleCmd}
	specs["scale-fanout-reads-per-server"] = spec{"DynamoDB reads per server of that fan-out crawl (each worker follows the audit log for the look-alike names rather than reading every server per invocation)", "the single crawl function's first crawl of the SCALE_SERVERS × SCALE_TOOLS fleet, reads/server", scaleCmd}
}

// runScale runs BenchmarkScale once and returns its figures.
func runScale() ([]Figure, error) {
	r, err := goBench(nil, "-bench", "Scale", "-benchtime", "1x", "-timeout", "30m", "./test/scale/")
	if err != nil {
		return nil, err
	}
	// The sub-benchmarks are Catalog/servers=<small>, Catalog/servers=<n>, FanOut/servers=<f>
	// and Appends/writers=<w>.
	var catalogs []int
	var writers []int
	fanout := ""
	for name := range r {
		if v, ok := strings.CutPrefix(name, "BenchmarkScale/Catalog/servers="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: %v", name, err)
			}
			catalogs = append(catalogs, n)
		}
		if v, ok := strings.CutPrefix(name, "BenchmarkScale/Appends/writers="); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				return nil, fmt.Errorf("benchmark %s: %v", name, err)
			}
			writers = append(writers, n)
		}
		if strings.HasPrefix(name, "BenchmarkScale/FanOut/") {
			fanout = name
		}
	}
	slices.Sort(catalogs)
	slices.Sort(writers)
	if len(catalogs) != 2 || len(writers) != 2 || fanout == "" {
		return nil, fmt.Errorf("BenchmarkScale reported %d catalog sizes, %d writer counts and fan-out %q; want 2 sizes (SCALE_SMALL below SCALE_SERVERS), 2 writer counts (SCALE_WRITERS below SCALE_WRITERS_MANY) and the fan-out", len(catalogs), len(writers), fanout)
	}
	appends, appendsMany := "BenchmarkScale/Appends/writers="+strconv.Itoa(writers[0]), "BenchmarkScale/Appends/writers="+strconv.Itoa(writers[1])
	small, big := "BenchmarkScale/Catalog/servers="+strconv.Itoa(catalogs[0]), "BenchmarkScale/Catalog/servers="+strconv.Itoa(catalogs[1])
	var errs []error
	get := func(name, unit string) float64 {
		v, err := r.median(name, unit)
		errs = append(errs, err)
		return v
	}
	div := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	fig := func(id, unit string, v, base float64, goal string) Figure {
		return Figure{ID: id, Unit: unit, Value: v, Baseline: base, Ratio: round4(div(v, base)), Goal: goal}
	}
	perMin, listPerMin := get(big, "unchanged-servers/min"), get(big, "unchanged-list-servers/min")
	wall, smallWall := get(big, "unchanged-wall-s"), get(small, "unchanged-wall-s")
	first, smallFirst := get(big, "first-wall-s"), get(small, "first-wall-s")
	reads, smallReads := get(big, "first-ddb-reads/unit"), get(small, "first-ddb-reads/unit")
	refresh, smallRefresh := get(big, "refresh-ddb-reads"), get(small, "refresh-ddb-reads")
	many, one, seq := get(appends, "appendN-appends/s"), get(appends, "append1-appends/s"), get(appends, "appendSeq-appends/s")
	manyM, seqM := get(appendsMany, "appendN-appends/s"), get(appendsMany, "appendSeq-appends/s")
	foPerMin, firstPerMin := get(fanout, "fanout-servers/min"), get(big, "first-servers/min")
	foWall, foLongest, foReads := get(fanout, "fanout-wall-s"), get(fanout, "fanout-longest-invocation-s"), get(fanout, "fanout-ddb-reads/unit")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	figs := []Figure{
		fig("scale-crawl-servers-per-min", "servers/min", perMin, listPerMin, ">= 1000 (5,000 in 300 s)"),
		fig("scale-crawl-wall-s", "s", wall, smallWall, "<= 300 s at 5,000"),
		fig("scale-crawl-first-wall-s", "s", first, smallFirst, "<= 300 s at 5,000"),
		fig("scale-crawl-first-reads-per-server", "reads/server", reads, smallReads, "ratio 1 (flat in catalog size)"),
		fig("scale-refresh-reads-per-replica", "reads", refresh, smallRefresh, "ratio 1 (flat in catalog size)"),
		fig("scale-log-appends-per-s", "appends/s", seqM, manyM, ">= 10× baseline"),
		fig("scale-log-appends-few-writers-per-s", "appends/s", seq, many, "— (at most half the HEAD's calls per append here)"),
		{ID: "scale-log-appends-1writer-per-s", Unit: "appends/s", Value: one, Goal: "—"},
		fig("scale-fanout-servers-per-min", "servers/min", foPerMin, firstPerMin, "one schedule crawls any number of servers"),
		{ID: "scale-fanout-wall-s", Unit: "s", Value: foWall, Goal: "—"},
		fig("scale-fanout-longest-invocation-s", "s", foLongest, 120, "< 120 s (no invocation near the timeout)"),
		fig("scale-fanout-reads-per-server", "reads/server", foReads, reads, "ratio ~1 (flat in catalog size)"),
	}
	fmt.Fprintf(os.Stderr, "bench: scale run at %d servers (small catalog %d), appends with writers %s, fan-out %s\n", catalogs[1], catalogs[0], fmt.Sprint(writers), strings.TrimPrefix(fanout, "BenchmarkScale/FanOut/"))
	return figs, nil
}

// round4 rounds to 4 significant digits, as the benchmarks print their metrics.
func round4(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return r
}

// merge returns old with every figure of add replacing the one of the same ID, or
// appended: a run of some figures keeps the others of bench.json intact.
func merge(old, add []Figure) []Figure {
	// A figure no spec names any more (an ID retired or renamed) is dropped.
	out := slices.DeleteFunc(slices.Clone(old), func(o Figure) bool { _, ok := specs[o.ID]; return !ok })
	for _, f := range add {
		if i := slices.IndexFunc(out, func(o Figure) bool { return o.ID == f.ID }); i >= 0 {
			out[i] = f
		} else {
			out = append(out, f)
		}
	}
	return out
}

// isScale reports whether a figure is one of -scale's (not in README.md's table).
func isScale(f Figure) bool { return strings.HasPrefix(f.ID, "scale-") }
