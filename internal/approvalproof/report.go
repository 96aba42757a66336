package approvalproof

import "fmt"

// Report is what one check found, as `agentgate ci --json` prints it under "approvals".
type Report struct {
	// Source is the log (a directory or URL) or the bundle file checked.
	Source string `json:"source"`
	// Offline is true when a bundle was checked rather than the log.
	Offline bool `json:"offline"`
	// Origin, Size and Root are the checkpoint's (Root in base64).
	Origin string `json:"origin"`
	Size   int64  `json:"size"`
	Root   string `json:"root"`
	// CosignedBy names the policy's witnesses whose cosignatures verified.
	CosignedBy []string `json:"cosignedBy"`
	// Checked counts the locked digests; Approved those approved; Critical the rest.
	Checked  int `json:"checked"`
	Approved int `json:"approved"`
	Critical int `json:"critical"`
	// Tools is one result per locked digest, sorted by server, tool and digest.
	Tools []Result `json:"tools"`
	// Scope says what the check proves.
	Scope string `json:"scope"`
}

// NewReport sums results of a check of source at cp.
func NewReport(source string, offline bool, cp Checkpoint, results []Result) *Report {
	r := &Report{Source: source, Offline: offline, Origin: cp.Origin, Size: cp.Size, Root: cp.Root.String(),
		CosignedBy: append([]string{}, cp.Cosigned...), Checked: len(results), Tools: results}
	if r.Tools == nil {
		r.Tools = []Result{}
	}
	for _, x := range results {
		if x.Failed() {
			r.Critical++
		} else {
			r.Approved++
		}
	}
	if offline {
		r.Scope = fmt.Sprintf("offline: each approval is proven included in checkpoint %d of %s; a rejection or a newer approval that is not in the bundle is only seen online", cp.Size, cp.Origin)
	} else {
		r.Scope = fmt.Sprintf("online: every entry up to checkpoint %d of %s was read and replayed; decisions after that checkpoint are not seen until it is published", cp.Size, cp.Origin)
	}
	return r
}
