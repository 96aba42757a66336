// Package benchratio measures a benchmark's subject against a baseline in the same run, in
// alternating rounds, and reports the ratio of the medians. This machine is shared: a
// figure measured alone drifts with whatever else runs, a ratio of interleaved rounds
// much less. Test support only (imported from _test.go files).
package benchratio
