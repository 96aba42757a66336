// Package witnessclient is the HTTP client of a c2sp.org/tlog-witness witness: it posts
// a checkpoint to <submission prefix>/add-checkpoint ("old N", the consistency proof, a
// blank line, the signed note) and returns the cosignature lines, translating the
// witness's statuses into checkpoint's errors (409 → *checkpoint.SizeConflict, 400/403/
// 404/422 → checkpoint.ErrWitnessRefused with the witness's reason, 5xx and network
// failures → checkpoint.ErrUnavailable). It implements checkpoint.Witness.
package witnessclient
