package netguard_test

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/agentgate-dev/agentgate/internal/netguard"
)

func ExampleGuard_CheckURL() {
	g := netguard.New(netguard.Config{AllowPrivate: true})
	for _, raw := range []string{
		"http://127.0.0.1:3000/mcp",
		"http://0x7f.1/",
		"http://169.254.169.254/latest/meta-data/",
		"http://user:secret@mcp.example.com/",
	} {
		_, err := g.ParseURL(raw)
		fmt.Printf("%-42s metadata=%-5v %v\n", raw, errors.Is(err, netguard.ErrMetadataAddress), err)
	}
	// Output:
	// http://127.0.0.1:3000/mcp                  metadata=false <nil>
	// http://0x7f.1/                             metadata=false netguard: refused URL: host "0x7f.1" is a non-canonical spelling of 127.0.0.1
	// http://169.254.169.254/latest/meta-data/   metadata=true  netguard: refusing 169.254.169.254: cloud metadata address, refused even with AllowPrivate
	// http://user:secret@mcp.example.com/        metadata=false netguard: refused URL: http://user:xxxxx@mcp.example.com/ has userinfo
}

func ExampleClassify() {
	for _, s := range []string{"8.8.8.8", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "100.100.100.200"} {
		fmt.Println(s, "->", netguard.Classify(netip.MustParseAddr(s)))
	}
	// Output:
	// 8.8.8.8 -> public
	// ::ffff:10.0.0.1 -> private (RFC 1918)
	// 64:ff9b::a9fe:a9fe -> cloud metadata
	// 100.100.100.200 -> cloud metadata
}

// ExampleGuard_HTTPClient builds the client a crawler uses; it makes no request here.
func ExampleGuard_HTTPClient() {
	g := netguard.New(netguard.Config{})
	c := g.HTTPClient(netguard.ClientConfig{MaxResponseBytes: 4 << 20})
	fmt.Println(c.Timeout)
	// Output:
	// 30s
}
