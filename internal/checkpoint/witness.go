package checkpoint

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agentgate-dev/agentgate/internal/audit"
)

// Witness is one c2sp.org/tlog-witness witness (internal/witnessclient speaks its HTTP
// API). AddCheckpoint submits a checkpoint note with a consistency proof from oldSize, the
// size the witness last cosigned for the note's origin, and returns the witness's
// cosignature lines. Errors: a *SizeConflict when the witness has cosigned another size
// (409); ErrWitnessRefused wrapped when it refuses the checkpoint (a proof that does not
// verify, 422; a key it does not trust, 403/404; a malformed request, 400);
// ErrUnavailable wrapped when it cannot be reached or fails (5xx).
type Witness interface {
	AddCheckpoint(ctx context.Context, oldSize int64, proof tlog.TreeProof, note []byte) ([]byte, error)
	// String names the witness in messages (its URL).
	String() string
}

// SizeConflict is a witness's 409: it last cosigned a checkpoint of Size.
type SizeConflict struct{ Size int64 }

func (e *SizeConflict) Error() string {
	return fmt.Sprintf("the witness last cosigned size %d", e.Size)
}

// Witness errors.
var (
	ErrWitnessRefused = errors.New("the witness refused the checkpoint")
	ErrUnavailable    = errors.New("the witness is unavailable")
)

// Cosign submits note (the checkpoint of t's first size leaves) to w, starting from
// oldSize (0 when unknown) and, on a size conflict, once more from the size the witness
// reports, with a consistency proof from t. A witness that last cosigned a larger size,
// or whose tree the log does not extend (its proof fails), refuses: that is a fork or a
// rollback, reported with ErrWitnessRefused.
func Cosign(ctx context.Context, w Witness, t *audit.Tree, size int64, noteBytes []byte, oldSize int64) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		var proof tlog.TreeProof
		if oldSize > 0 && oldSize < size {
			var err error
			if proof, err = t.ConsistencyProof(oldSize, size); err != nil {
				return nil, fmt.Errorf("witness %s: consistency proof %d → %d: %w", w, oldSize, size, err)
			}
		}
		sigs, err := w.AddCheckpoint(ctx, oldSize, proof, noteBytes)
		var conflict *SizeConflict
		if errors.As(err, &conflict) && attempt == 0 {
			if conflict.Size > size {
				return nil, fmt.Errorf("witness %s: %w: it has cosigned size %d of this log, larger than this checkpoint (%d): the log was rolled back", w, ErrWitnessRefused, conflict.Size, size)
			}
			oldSize = conflict.Size
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("witness %s: %w", w, err)
		}
		return sigs, nil
	}
}
