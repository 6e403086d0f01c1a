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
	var res Reservation
	err := Locked(ctx, lock, func() error {
		cs, err := list(ctx)
		if err != nil {
			return err
		}
		if _, ok := Find(cs, name); ok {
			return fmt.Errorf("cluster %s already exists: delete it with `marina cluster delete %s`, or choose another name", name, name)
		}
		held, err := r.List()
		if err != nil {
			return err
		}
		for _, h := range held {
			if h.Name == name {
				return fmt.Errorf("cluster %s is being created by another marina (process %d)", name, h.PID)
			}
		}
		n, err := Free(cs, held)
		if err != nil {
			return err
		}
		res, err = r.Take(n, name)
		return err
	})
	return res, err
}

// Locked runs fn holding the slot lock file lock: whatever fn reads of
// the clusters and reservations cannot change meanwhile, except by fn.
func Locked(ctx context.Context, lock string, fn func() error) error {
	if err := os.MkdirAll(filepath.Dir(lock), 0o700); err != nil {
		return err
	}
	fl := flock.New(lock)
	lctx, cancel := context.WithTimeout(ctx, lockWait)
	defer cancel()
	if ok, err := fl.TryLockContext(lctx, 50*time.Millisecond); !ok {
		return fmt.Errorf("another marina holds %s: %v", lock, err) //nolint:errorlint // err may be nil here
	}
	defer fl.Unlock()
	return fn()
}
