// Package testutil holds what several packages' tests share.
package testutil

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// RSS is the process's resident set in bytes (/proc/self/statm); the test
// is skipped where there is no /proc.
func RSS(t testing.TB) int64 {
	t.Helper()
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skip("no /proc/self/statm")
	}
	pages, _ := strconv.ParseInt(strings.Fields(string(raw))[1], 10, 64)
	return pages * int64(os.Getpagesize())
}
