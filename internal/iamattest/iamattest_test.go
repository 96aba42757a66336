package iamattest

import "testing"

func TestRoleAndSame(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{"arn:aws:iam::123456789012:role/dev-toolwarrant-crawl", "arn:aws:sts::123456789012:assumed-role/dev-toolwarrant-crawl/fn", true},
		{"arn:aws:iam::123456789012:role/path/to/crawl", "arn:aws:sts::123456789012:assumed-role/crawl/s", true},
		{"arn:aws:iam::123456789012:role/crawl", "arn:aws:sts::999999999999:assumed-role/crawl/s", false},
		{"arn:aws:iam::123456789012:role/crawl", "arn:aws:sts::123456789012:assumed-role/approver/alice", false},
		{"arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/alice", true},
		{"arn:aws:iam::123456789012:user/alice", "arn:aws:iam::123456789012:user/bob", false},
		{"", "", false},
	}
	for _, tc := range tests {
		if got := Same(tc.a, tc.b); got != tc.same {
			t.Errorf("Same(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}
