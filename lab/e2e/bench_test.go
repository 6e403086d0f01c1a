package e2e

import (
	"testing"
)

// The benchmarks time whole marina runs against a running lab VM, as a user
// would see them, and report the guest round trips each one makes (on a
// real Mac every round trip costs tens of milliseconds more than here).
//
//	go test ./lab/e2e -run '^$' -bench . -benchtime 20x

func benchMarina(b *testing.B, args ...string) {
	needLab(b)
	mustMarina(b, "up")
	b.ResetTimer()
	var last result
	for i := 0; i < b.N; i++ {
		last = mustMarina(b, append(args, "--debug")...)
	}
	b.StopTimer()
	b.ReportMetric(float64(tripCount(b, last.stderr)), "trips/op")
}

func BenchmarkStatus(b *testing.B) { benchMarina(b, "status") }

func BenchmarkUpNoop(b *testing.B) { benchMarina(b, "up") }
