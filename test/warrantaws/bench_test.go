package warrantaws_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/agentgate-dev/agentgate/internal/app/awsapp"
	"github.com/agentgate-dev/agentgate/internal/awstest"
	"github.com/agentgate-dev/agentgate/internal/testenv"
)

// BenchmarkCrawlCost measures one crawl of a server with 40 tools through the crawl
// handler against moto and KMS: wall time and DynamoDB/KMS calls per crawled tool, for an
// unchanged listing and for one where every tool is a new version.
//
//	go test -run '^$' -bench CrawlCost -benchtime 5x ./test/warrantaws/
func BenchmarkCrawlCost(b *testing.B) {
	const tools = 40
	for _, mode := range []string{"unchanged", "all-new"} {
		b.Run(mode, func(b *testing.B) {
			s := newStack(b)
			listing := func(gen int) []string {
				out := make([]string, tools)
				for i := range out {
					out[i] = tool(fmt.Sprintf("tool_%02d", i), fmt.Sprintf("Tool %d, generation %d.", i, gen))
				}
				return out
			}
			s.mcp.SetTools(listing(0)...)
			ddb, km := awstest.NewCalls(), awstest.NewCalls()
			o := awsapp.WarrantOptions{DynamoDB: []func(*dynamodb.Options){func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, ddb.Middleware) }},
				KMS: []func(*kms.Options){func(o *kms.Options) { o.APIOptions = append(o.APIOptions, km.Middleware) }}}
			crawl := s.crawl(b, o)
			ev := json.RawMessage(testenv.Event(b, "crawl-scheduled.json"))
			if res, err := crawl(b.Context(), ev); err != nil || res.Recorded != 1 {
				b.Fatalf("first crawl: %+v %v", res, err)
			}
			ddb.Take()
			km.Take()
			var dCalls, kCalls int
			var wall time.Duration
			b.ResetTimer()
			for i := range b.N {
				if mode == "all-new" {
					s.mcp.SetTools(listing(i + 1)...)
				}
				start := time.Now()
				res, err := crawl(b.Context(), ev)
				wall += time.Since(start)
				if err != nil || res.Recorded != 1 {
					b.Fatalf("crawl: %+v %v", res, err)
				}
				for _, n := range ddb.Take() {
					dCalls += n
				}
				for _, n := range km.Take() {
					kCalls += n
				}
			}
			per := float64(b.N * tools)
			b.ReportMetric(float64(dCalls)/per, "ddb-calls/tool")
			b.ReportMetric(float64(kCalls)/per, "kms-calls/tool")
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "ms/crawl")
		})
	}
}
