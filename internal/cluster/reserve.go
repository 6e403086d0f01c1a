package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// lockWait bounds the wait for another marina's create to let go of the
// slot lock: it holds it only while it chooses.
const lockWait = time.Minute

// Reserve chooses the lowest free slot for a new cluster name under the
// lock file lock, from the clusters list shows (read again under the lock,
// so no other create can change them meanwhile) and the slots other
// creates hold.
func (r Reservations) Reserve(ctx context.Context, lock, name string, list func(context.Context) ([]Info, error)) (Reservation, error) {
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		return Reservation{}, err
	}
	fl := flock.New(lock)
	lctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	if ok, err := fl.TryLockContext(lctx, 50*time.Millisecond); !ok {
		return Reservation{}, fmt.Errorf("another marina holds %s: %v", lock, err)
	}
	defer fl.Unlock()
	cs, err := list(ctx)
	if err != nil {
		return Reservation{}, err
	}
	if _, ok := Find(cs, name); ok {
		return Reservation{}, fmt.Errorf("cluster %s already exists: delete it with `marina cluster delete %s`, or choose another name", name, name)
	}
	held, err := r.List()
	if err != nil {
		return Reservation{}, err
	}
	for _, h := range held {
		if h.Name == name {
			return Reservation{}, fmt.Errorf("cluster %s is being created by another marina (process %d)", name, h.PID)
		}
	}
	n, err := Free(cs, held)
	if err != nil {
		return Reservation{}, err
	}
	return r.Take(n, name)
}
