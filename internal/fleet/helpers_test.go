package fleet

import "errors"

var errBoom = errors.New("boom")
