// Package pkgid reads what an MCP server runs from — the npm package behind npx, the PyPI
// project behind uvx or pipx run, the image behind docker run or podman run, the URL of a
// remote server — and resolves it against its registry to what pins it by content: npm's
// dist.integrity, the sha256 of every file of a PyPI version, an image's manifest digest,
// the SHA-256 of a TLS leaf's SubjectPublicKeyInfo. agentgate lock records it in
// agentgate.lock (lockfile.Package) and agentgate ci checks it against the registry
// (docs/agentgate.md, "Package identity").
//
// [Parse] and [ParseURL] read a server's configuration alone, without the network; a
// [Resolver] asks the registries' own HTTP APIs (the npm registry's, PyPI's JSON API, the
// OCI distribution API with Docker Hub's anonymous token flow), every request within a
// timeout and every answer within a size bound, so that a slow or hostile registry costs
// seconds and megabytes, not the machine.
package pkgid
