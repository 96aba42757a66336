// Command pads is the Padlock Lambda behind an API Gateway HTTP API: the same http.Handler as
// lockerd, over DynamoDB (internal/dynamostore). Everything is built once at cold start,
// before lambda.Start; an invocation only translates the API Gateway v2 event through
// aws-lambda-go-api-proxy and runs the handler. The function decodes the raw event itself,
// so one it cannot read as an HTTP API request is answered 400 with the Padlock error body,
// never an invocation error (proxy.go). Configuration: PADS_TABLE (required),
// PADS_DYNAMODB_MAX_ATTEMPTS and lockerd's LOCKER_* variables (internal/config).
package main
