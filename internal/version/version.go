// Package version identifies the build: the release version and the commit it was built
// from, both stamped by the Makefile with -ldflags -X, so a running binary can say exactly
// which source it is (a version string alone does not identify a build).
package version

// Version is the release version, "dev" for an unstamped build.
var Version = "0.1.0-dev"

// Commit is the full commit ID the binary was built from, "" when unknown.
var Commit = ""

// String returns "VERSION (COMMIT)" or just the version when the commit is unknown.
func String() string {
	if Commit == "" {
		return Version
	}
	return Version + " (" + Commit + ")"
}
