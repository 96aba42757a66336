package extmcp

import (
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"

	"github.com/agentgate-dev/agentgate/internal/enforce"
	"github.com/agentgate-dev/agentgate/internal/enforce/enforcetest"
	"github.com/agentgate-dev/agentgate/internal/extmcp/pb"
)

// BenchmarkServeListTools is a 100-tool tools/list response check over loopback gRPC, the
// client in the same process: the processor's server as served (its codec taking every
// buffer from its pool), and the same server with grpc-go's own proto codec, whose two
// whole-message buffers per RPC come from the process-wide default pool (1 MiB, cleared on
// every use, for a 58 KB listing). The client is the same for both.
//
//	go test -run='^$' -bench=ServeListTools ./internal/extmcp/
func BenchmarkServeListTools(b *testing.B) {
	src := enforcetest.NewSource()
	result := enforcetest.Listing(b, src, "everything", 100)
	p, err := enforce.New(enforce.Config{Servers: []string{"everything"}, Source: src})
	if err != nil {
		b.Fatal(err)
	}
	p.Start(b.Context())
	b.Cleanup(func() { p.Close(b.Context()) })
	req := &pb.McpResponse{ServiceNames: []string{"everything"}, Method: "tools/list", McpResponse: result}
	opts := ServerOptions(enforce.DefaultMaxMessageBytes, enforce.DefaultMaxReplyBytes)
	for _, tc := range []struct {
		name string
		opts []grpc.ServerOption
	}{{"served", opts}, {"grpc-codec", append(opts, grpc.ForceServerCodecV2(encoding.GetCodecV2("proto")))}} {
		b.Run(tc.name, func(b *testing.B) {
			s := grpc.NewServer(tc.opts...)
			pb.RegisterExtMcpServer(s, &handler{p: p})
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go func() { _ = s.Serve(lis) }()
			defer s.Stop()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			c := pb.NewExtMcpClient(conn)
			b.SetBytes(int64(len(result)))
			for b.Loop() {
				r, err := c.CheckResponse(b.Context(), req)
				if err != nil || r.GetMutated() == nil {
					b.Fatalf("listing not filtered: %v %v", err, r)
				}
			}
		})
	}
}
