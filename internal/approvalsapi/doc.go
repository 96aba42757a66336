// Package approvalsapi is the approvals API of toolwarrant on AWS, both ends of it: the
// HTTP handler the approvals Lambda serves behind API Gateway (AWS_IAM authorization on
// every route), and the SigV4-signing client `toolwarrant --remote URL` calls it with.
//
//	GET  /v1/proposals                                   pending versions, graded, and the audit head
//	GET  /v1/tools                                       every tool, graded, and the audit head
//	GET  /v1/servers/{server}/tools/{tool}/diff?from=&to= the graded diff of two versions
//	GET  /v1/servers/{server}/tools/{tool}/versions/{v}  one version (a digest, a prefix, or "current")
//	POST /v1/servers/{server}/tools/{tool}/decisions     approve, reject or roll back one exact digest
//	POST /v1/servers                                     add a server for the crawl to list
//	GET  /v1/servers/{server}/bulk                       what one bulk approval may name, what it may not
//	POST /v1/servers/{server}/bulk                       approve up to 25 routine first-sight tools in one statement
//	GET  /v1/audit?after=SEQ&limit=N                     audit entries after SEQ, as export lines
//
// It is a transport and only translates. A request becomes a warrant.Service call: a
// decision goes through the decision use case (warrant.Service.DecideAs, or ApproveAllAs
// for a bulk approval) with the
// caller's IAM principal as the attester (iamattest.Attester). The answer is JSON, and the
// service's errors become statuses in one function (errors.go). The caller's principal
// and request ID are handed in by a function of the request (Config.Caller). The
// awsapp wiring reads them from API Gateway's request context, so this package does not
// depend on the Lambda proxy.
//
// Every answer fits one Lambda response (MaxAnswerBytes, answer.go). A diff too large
// for it omits the two definitions (DiffAnswer.DefinitionsOmitted) and the client reads
// each version alone. An answer that still does not fit is refused with 413, never sent.
//
// The client (client.go: Remote, NewRemote) signs every request with the operator's AWS
// credentials, maps statuses back to the warrant sentinels (RemoteError), and refuses a
// definition that does not hash to the digest it is answered with. It links the AWS
// SDK's SigV4 signer. The handler needs nothing from the SDK.
package approvalsapi
