package awsapp

import (
	"log/slog"
	"net/http"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/agentgate-dev/agentgate/internal/approvalsapi"
)

// ApprovalsHandler is the approvals API (internal/approvalsapi) over w, as the approvals
// Lambda serves it behind API Gateway: the caller is the IAM principal and request ID
// of API Gateway's request context (GatewayCaller), and crawlRole may never decide.
func ApprovalsHandler(w *Warrant, crawlRole string, headerSecrets []string, log *slog.Logger) http.Handler {
	h, err := approvalsapi.New(approvalsapi.Config{Service: w.Service, Caller: GatewayCaller, CrawlRole: crawlRole, HeaderSecrets: headerSecrets, Logger: log})
	if err != nil {
		// Only a Warrant that NewWarrant did not build has no service: refuse every
		// request rather than fail in one.
		return http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			http.Error(rw, `{"error":"the approvals API is not configured"}`, http.StatusInternalServerError)
		})
	}
	return h
}

// GatewayCaller reads the caller from the API Gateway (HTTP API, payload 2.0) request
// context that aws-lambda-go-api-proxy puts on the request: the IAM principal ARN the
// AWS_IAM authorizer verified ("" without one) and the request ID.
func GatewayCaller(r *http.Request) approvalsapi.Caller {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return approvalsapi.Caller{RequestID: rc.RequestID}
	}
	return approvalsapi.Caller{Principal: rc.Authorizer.IAM.UserARN, RequestID: rc.RequestID}
}
