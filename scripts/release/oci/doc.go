// Package oci builds agentgate's container images with podman and writes them as
// reproducible OCI archives, and reads such an archive back, checking every digest in it.
//
// A [Podman] works on a private store under one directory (its own containers.conf and
// storage.conf: the vfs driver, runc, cgroupfs, no default ulimits), so a release or a test
// neither reads images from nor leaves anything in the machine's own store, and removing
// that directory removes every image, container and volume made through it. The release
// (scripts/release) and the container tests (test/containers) build the images with the
// same [Podman.Build] from the same Dockerfiles, on the distroless base pinned in them or
// on the local stand-in of [Podman.BuildLocalBase].
//
// [Podman.Save] rewrites `podman save --format oci-archive` with fixed tar headers, so two
// builds of the same binaries at the same timestamp give byte-identical archives;
// [ReadArchive] is the independent check that `release verify` runs on them.
package oci
