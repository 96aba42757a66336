package setting_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/agentgate-dev/agentgate/internal/setting"
)

func TestPositive(t *testing.T) {
	for _, c := range []struct{ v, want time.Duration }{{0, time.Second}, {-1, time.Second}, {2, 2}} {
		if got := setting.Positive(c.v, time.Second); got != c.want {
			t.Errorf("Positive(%v, 1s) = %v, want %v", c.v, got, c.want)
		}
	}
}

func TestLogger(t *testing.T) {
	if setting.Logger(nil) == nil {
		t.Error("Logger(nil) = nil")
	}
	l := slog.Default()
	if setting.Logger(l) != l {
		t.Error("Logger(l) is not l")
	}
}
