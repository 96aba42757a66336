package gatewayconf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"time"

	"github.com/agentgate-dev/agentgate/internal/canon"
	"github.com/agentgate-dev/agentgate/internal/mcpclient"
)

// ListGateway lists every tool the gateway serves at url (an MCP Streamable HTTP
// endpoint, such as http://127.0.0.1:3000/everything/mcp) and digests each tool object
// exactly as received, as the processor does. headers are sent on every request (for a
// gateway that authenticates clients). Errors wrap mcpclient.ErrUnavailable or
// mcpclient.ErrProtocol.
func ListGateway(ctx context.Context, url string, headers map[string]string, timeout time.Duration) ([]Listed, error) {
	l, err := mcpclient.ListTools(ctx, mcpclient.Server{Name: "gateway", Transport: mcpclient.TransportHTTP, URL: url, Headers: headers},
		mcpclient.Options{Timeout: timeout, HTTPClient: &http.Client{}, ClientName: "toolwarrant-verify-gateway"})
	if err != nil {
		return nil, err
	}
	out := make([]Listed, 0, len(l.Tools))
	for _, t := range l.Tools {
		x := Listed{Name: t.Name}
		c, err := canon.Transform(t.Raw)
		var ce *canon.Error
		switch {
		case errors.As(err, &ce):
			x.Refused = ce.Reason
		case err != nil:
			x.Refused = err.Error()
		case len(c) == 0 || c[0] != '{':
			x.Refused = "the tool is not a JSON object"
		default:
			s := sha256.Sum256(c)
			x.Digest = "sha256:" + hex.EncodeToString(s[:])
		}
		out = append(out, x)
	}
	return out, nil
}
