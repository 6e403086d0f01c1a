package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Poll reports the last state it saw, not a read that failed only as
// the deadline came; reads that keep failing are reported.
func TestPollState(t *testing.T) {
	errRead := errors.New("connection reset")
	run := func(results ...error) (string, error) {
		// One poll per result, then the wait ends as at a deadline.
		i := 0
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return Poll(ctx, func(ctx context.Context) (bool, string, error) {
			if i == len(results) {
				cancel()
				return false, "", ctx.Err()
			}
			err := results[i]
			i++
			return false, "Available=False", err
		})
	}
	if state, err := run(nil, nil, errRead); state != "Available=False" || !errors.Is(err, context.Canceled) {
		t.Errorf("one failed read at the end: %q, %v", state, err)
	}
	if state, _ := run(nil, errRead, errRead, errRead); state != "Available=False (and the last 3 reads failed: connection reset)" {
		t.Errorf("failing reads: %q", state)
	}
	if state, _ := run(errRead, errRead); state != "unreadable: connection reset" {
		t.Errorf("never read: %q", state)
	}
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "deployments"}, "controller", errors.New("no"))
	start := time.Now()
	if _, err := run(forbidden, nil, nil, nil, nil, nil, nil); !apierrors.IsForbidden(err) || time.Since(start) > PollInterval {
		t.Errorf("forbidden was waited out: %v after %s", err, time.Since(start))
	}
}
